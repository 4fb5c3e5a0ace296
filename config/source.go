package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// databaseKeys are the settings that say which database relay uses.
var databaseKeys = []string{"database_url", "database_direct_url"}

// DatabaseConfigured reports whether a database was configured: whether
// database_url or database_direct_url was given by a flag, a RELAY_*
// environment variable or the config file (--config), from the same
// sources Load reads. false means relay runs with DatabaseURLDefault
// because nobody chose a database, which `relay demo` takes as leave to
// start a throwaway PostgreSQL when nothing answers there. A value equal
// to the default still counts as configured.
func DatabaseConfigured(fs *pflag.FlagSet, lookupEnv func(string) (string, bool)) (bool, error) {
	for _, key := range databaseKeys {
		if fs != nil {
			if f := fs.Lookup(strings.ReplaceAll(key, "_", "-")); f != nil && f.Changed {
				return true, nil
			}
		}
		if _, ok := lookupEnv(EnvPrefix + "_" + strings.ToUpper(key)); ok {
			return true, nil
		}
	}
	if fs == nil {
		return false, nil
	}
	path, _ := fs.GetString("config")
	if path == "" {
		return false, nil
	}
	// Only the file, without defaults: a key is set if the file has it.
	v := viper.New()
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		return false, fmt.Errorf("error reading config file %q: %w", path, errors.New(Redact(err.Error())))
	}
	for _, key := range databaseKeys {
		if v.IsSet(key) {
			return true, nil
		}
	}
	return false, nil
}
