"""The package as a whole: layout rules, public surface, errors, start-up, wheel, docs pages."""
