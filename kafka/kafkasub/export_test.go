package kafkasub

// CrashBeforeCommit makes Run stop dead before the commit of a poll for which crash returns true.
func (c *Consumer) CrashBeforeCommit(crash func() bool) { c.crash = crash }
