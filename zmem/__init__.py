"""zmem: a git-native memory for AI agents."""

__version__ = "0.1.0"
