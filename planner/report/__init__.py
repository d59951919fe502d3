"""Reports: they only read a finished Plan."""
