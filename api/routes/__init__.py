"""One module of route handlers per resource."""
