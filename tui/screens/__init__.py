"""Modal screens pushed over the main view: frame details, confirmations, the key list."""
