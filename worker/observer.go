package worker

// Observer is told about every finished batch; the metrics exporter is one.
type Observer interface {
	BatchDone(sum *BatchSummary)
}

type nopObserver struct{}

func (nopObserver) BatchDone(*BatchSummary) {}
