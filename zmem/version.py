"""zmem's version, apart from the package's exports so that any module can name it (a user agent)."""
__version__ = "0.1.0"
