package server

import (
	"time"

	"github.com/lectern-reader/lectern/backend/internal/config"
)

// RescueHorizon is how long a poll left running by a dead replica waits
// before River runs it again, for the external tests.
func RescueHorizon(cfg config.Config) time.Duration { return rescueStuckJobsAfter(pollJobTimeout(cfg)) }
