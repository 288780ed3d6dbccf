"""What a fitted run leaves behind and what later runs read of it: the contract of a fitted
estimator, the latest fitted run, and the mixture a warm start continues."""
