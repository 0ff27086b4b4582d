"""Wire types (A2A 1.0), version codecs (0.3, 0.1) and the error tree."""
