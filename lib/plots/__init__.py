"""Per-experiment figure panels: pure drawing functions over tidy rows, shared by notebooks 01-05."""
