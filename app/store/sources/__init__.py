"""Data read where it lives: sources registered by reference, never copied into the store."""
