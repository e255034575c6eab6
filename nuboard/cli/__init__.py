"""The `nuboard` command line (click)."""
