"""nextword — the executable companion to *Predicting the Next Word*, Chapter 6."""

__version__ = "0.1.0"
