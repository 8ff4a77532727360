"""ColBench Backend Programming: collaborative Python coding scored by hidden unit tests."""
