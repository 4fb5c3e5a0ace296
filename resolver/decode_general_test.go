package resolver

// decodeGeneral is DecodePOI through encoding/json alone (no scanObject),
// the reference the fast path is checked and measured against.
func decodeGeneral(raw []byte) (POI, error) {
	fields, err := generalFields(raw)
	if err != nil {
		return POI{}, err
	}
	return validate(fields, true)
}
