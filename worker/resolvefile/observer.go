package resolvefile

import "time"

// Observer is told about every finished batch; the metrics exporter is one.
type Observer interface {
	// BatchDone is called after a batch's transaction committed.
	BatchDone(sum *BatchSummary)
	// BatchFailed is called when a batch's transaction failed and River
	// will retry it (or discard it after its last attempt).
	BatchFailed(took time.Duration)
}

type nopObserver struct{}

func (nopObserver) BatchDone(*BatchSummary)   {}
func (nopObserver) BatchFailed(time.Duration) {}
