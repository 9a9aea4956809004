"""The climb (configs/society_climb/; docs/climb.md): comparisons, tables and panels."""
