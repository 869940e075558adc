"""The stand-alone part of the harness: what the side scripts import with another tree on PYTHONPATH."""
