"""The machinery under poptorch.Options: a dictionary of declared options
that refuses unknown keys and changes once frozen, and the reader of
PopTorch's option files (`loadFromFile`).

Rules, as PopTorch has them:
- a public attribute is an option declared at construction; reading an
  undeclared one is an AttributeError naming it;
- `set` keeps the declared type (an int option takes an int), `createOrSet`
  may add a key;
- frozen options (a wrapped model's, a DataLoader's) refuse every change
  with AttributeError("Can't modify frozen Options"); a deep copy (`clone`)
  is unfrozen.
"""
import ast
import copy

from . import enums

__all__ = ["OptionsDict", "parse_option_file"]

FROZEN_MESSAGE = "Can't modify frozen Options"


class OptionsDict:
    """Options stored as values; sub-objects that are OptionsDicts freeze
    and unfreeze with their parent."""

    def __init__(self, **defaults):
        object.__setattr__(self, "_is_frozen", False)
        object.__setattr__(self, "_values", dict(defaults))

    # --- values ---------------------------------------------------------
    def set(self, **kwargs):
        self.checkIsFrozen()
        for option, value in kwargs.items():
            if option not in self._values:
                raise AttributeError(f"Invalid option {option}, valid options are {sorted(self._values)}")
            expected = type(self._values[option])
            if not isinstance(value, expected):
                raise TypeError(f"Unexpected type {type(value)} for option {option}. Expected {expected}")
            self._values[option] = value

    def createOrSet(self, **kwargs):
        self.checkIsFrozen()
        for option, value in kwargs.items():
            if option in self._values:
                self.set(**{option: value})
            else:
                self._values[option] = value

    def exists(self, option):
        return option in self._values

    def deleteIfExists(self, option):
        self.checkIsFrozen()
        self._values.pop(option, None)

    def toDict(self):
        return dict(self._values)

    def update(self, other):
        """Merges these values into `other` (PopTorch's helper for toDict)."""
        other.update(self._values)
        return other

    # --- freezing -------------------------------------------------------
    def _children(self):
        return [v for v in self.__dict__.values() if isinstance(v, OptionsDict)]

    def _changeFreezeState(self, frozen):
        object.__setattr__(self, "_is_frozen", frozen)
        for child in self._children():
            child._changeFreezeState(frozen)
        popart = self.__dict__.get("_popart")
        if popart is not None and not isinstance(popart, OptionsDict):
            popart._is_frozen = frozen

    def _freeze(self):
        self._changeFreezeState(True)

    def _unfreeze(self):
        self._changeFreezeState(False)

    def checkIsFrozen(self):
        if self.__dict__.get("_is_frozen", False):
            raise AttributeError(FROZEN_MESSAGE)

    def __deepcopy__(self, memo):
        cls = self.__class__
        copied = cls.__new__(cls)
        memo[id(self)] = copied
        for key, value in self.__dict__.items():
            object.__setattr__(copied, key, False if key == "_is_frozen" else copy.deepcopy(value, memo))
        return copied

    # --- attribute access -----------------------------------------------
    def __getattr__(self, option):
        # Only called when normal lookup fails: the option values.
        values = self.__dict__.get("_values")
        if values is not None and option in values:
            return values[option]
        raise AttributeError(f"Invalid attribute {option}.")

    def __setattr__(self, option, value):
        self.checkIsFrozen()
        if option.startswith("_"):
            object.__setattr__(self, option, value)
        else:
            self.set(**{option: value})

    def __call__(self, option):
        return getattr(self, option)

    def __repr__(self):
        return f"{type(self).__name__}(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


def _literal(node):
    """A config file argument: a Python literal, or an enum named as
    poptorch.Enum.Value / Enum.Value, or a torch dtype (torch.half)."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    names = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.insert(0, node.id)
    if names and names[0] == "poptorch":
        names = names[1:]
    if len(names) == 2 and hasattr(enums, names[0]):
        return getattr(getattr(enums, names[0]), names[1])
    if len(names) == 2 and names[0] == "torch":
        import torch  # noqa: WPS433 (only for dtypes named in a file)
        return getattr(torch, names[1])
    raise ValueError("unsupported argument " + ".".join(names))


def parse_option_file(options, path):
    """Applies each line of `path`, written as `deviceIterations(4)` or
    `Training.gradientAccumulation(8)` (Python's syntax without the
    `options.` prefix; # comments allowed), to `options`."""
    from .options import ConfigFileError  # noqa: WPS433 (options imports this module)
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        where = f"{path}:{number}"
        try:
            call = ast.parse(text, mode="eval").body
            if not isinstance(call, ast.Call):
                raise ValueError("expected a call such as deviceIterations(4)")
            names = []
            func = call.func
            while isinstance(func, ast.Attribute):
                names.insert(0, func.attr)
                func = func.value
            if not isinstance(func, ast.Name):
                raise ValueError("expected a method name")
            names.insert(0, func.id)
            target = options
            for name in names:
                target = getattr(target, name)
            args = [_literal(a) for a in call.args]
            kwargs = {k.arg: _literal(k.value) for k in call.keywords}
        except (SyntaxError, ValueError, AttributeError) as e:
            raise ConfigFileError(f"{where}: {text}: {e}") from e
        target(*args, **kwargs)
    return options
