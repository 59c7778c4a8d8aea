"""The study plug-ins: one module per mechanism, each registering itself with ``register_variant``.

Every module in this package is imported when a variant is checked or built
(:func:`nmtvariants.models.variants.load_plugins`), so adding a mechanism means adding a module here
and nothing else: no shared list to edit. A plug-in creates its parameters inside its installer,
after the base model's ``reset_parameters()``, and initialises them with
:func:`nmtvariants.models.variants.init_plugin_parameters` (Glorot weights, zero biases, unit
LayerNorm gains: the base model's rule), unless its paper prescribes another initialisation.
"""
