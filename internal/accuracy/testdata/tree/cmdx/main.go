package main

import (
	"fmt"

	"example.com/tree/store"
)

func main() {
	s := store.New("x")
	if err := s.Put("a", 1); err != nil {
		fmt.Println(err)
	}
	c := &store.Cache{}
	_ = c.Close()
	run(func() { s.Close() })
}

func run(f func()) { f() }
