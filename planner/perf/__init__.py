"""Performance physics: what one GPU type can do for one workload. No solver here."""
