"""Errors that the command line reports as one readable line instead of a traceback."""


class NMTVariantsError(Exception):
    """A problem with the user's input or setup; the message says what to do about it."""


class InputError(NMTVariantsError):
    """Bad input data: the message names the file, the line and the fix."""


class ConfigError(NMTVariantsError):
    """A bad configuration value: the message names the key's path."""


class MissingResourceError(NMTVariantsError):
    """A model, tool or file that cannot be fetched here: the message says how to get it."""
