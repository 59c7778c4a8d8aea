"""The study plug-ins: one package per mechanism, each declaring itself with ``declare_variant`` (or
``declare_strategy``).

Every package here is imported when a variant is checked or built
(:func:`nmtvariants.models.variants.load_plugins`), so adding a mechanism means adding a package here
and nothing else: no shared list to edit. A package's ``__init__`` holds the torch-free half: the
plug-in's name, the streams it reads, its options and their checks, and where its installer lives
(``"<package>.modules:install_<name>"``); ``modules.py`` holds the torch modules and the installer,
imported when a model is built. Checking and planning a config (the Snakefile does both at every
start) therefore never imports torch. A plug-in creates its parameters inside its installer, after the
base model's ``reset_parameters()``, and initialises them with
:func:`nmtvariants.models.variants.init_plugin_parameters` (Glorot weights, zero biases, unit
LayerNorm gains: the base model's rule), unless its paper prescribes another initialisation.
"""
