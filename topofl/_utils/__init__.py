"""The internal utilities the rest of topofl builds on: files, processes, random
numbers, validation, specs, registries, config files, Markdown, user imports, the
machine's CPU and numeric environment, the code fingerprint and the run hash. Nothing here
is public API: import the public names from the packages that use them.
"""

__all__: list[str] = []
