"""One widget per module; each takes its slice of the Report and shows it."""
