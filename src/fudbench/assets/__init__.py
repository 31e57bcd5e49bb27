"""External assets of the paper profile: checked before any job (check.py; `python -m fudbench.assets
CONFIG`), and stand-ins with random contents for tests and the GPU suite (stand_ins.py).

Floor 6, beside analysis: imports the floors below (core, data, models, config).
"""

from fudbench.core.moved import names_of

__getattr__ = names_of(__name__, "fudbench.assets.check")  # the names of check.py, as when this package was one module
