"""Tables (csv + markdown) and figures built from the stages' JSON and text outputs."""
