"""The Litestar HTTP service (issue: HTTP service); empty until then."""
