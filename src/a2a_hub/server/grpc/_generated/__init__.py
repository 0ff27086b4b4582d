"""Generated from proto/a2a.proto by `make proto`; do not edit."""
