"""wandb.config: the run's config with W&B's access (config.lr, config["lr"], update, get,
as_dict), each change written to run.json's `config` at once, so the Config card of the run
page, the Runs table and the query language see it."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nuboard.errors import InvalidArgumentError


class Config(Mapping):
    """The run's config, a Mapping (get, keys, items and `in` read its dict). `save` writes
    the whole config (None: a disabled run keeps it in memory only). Values are stored as
    nb.init stores a config (run_config.to_config: numpy scalars as numbers, paths as text,
    ...)."""

    def __init__(self, data: dict, save: "Callable[[dict], None] | None") -> None:
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_save", save)

    # -- reading ----------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return self._data[key]
        except KeyError:
            raise AttributeError(f"wandb.config has no key {key!r}") from None

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def as_dict(self) -> dict:
        """A copy of the config as a nested dict."""
        import copy
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        return f"wandb.config({self._data!r:.200})"

    # -- changing ----------------------------------------------------------------------------
    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __setattr__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        data = dict(self._data)
        del data[key]
        self._store(data)

    def update(self, d: Any = None, allow_val_change: bool = True, **kwargs: Any) -> None:
        """Add or change keys: a dict, an argparse.Namespace, a dataclass (as nb.init takes a
        config), and keyword arguments. W&B's allow_val_change=False refuses to change a
        value already set."""
        from nuboard.recording.run_config import to_config
        new = dict(to_config(d)) if d is not None else {}
        new.update(to_config(kwargs))
        if not allow_val_change:
            for key, value in new.items():
                if key in self._data and self._data[key] != value:
                    raise InvalidArgumentError(
                        f"wandb.config.update: {key!r} is {self._data[key]!r:.60} already, not "
                        f"{value!r:.60}; pass allow_val_change=True to change it.")
        self._store({**self._data, **new})

    def setdefaults(self, d: dict) -> None:
        """Add the keys of d that the config does not have."""
        self.update({k: v for k, v in d.items() if k not in self._data})

    def _store(self, data: dict) -> None:
        from nuboard.recording.run_config import to_config
        data = to_config(data)                       # the size and depth rules of a config
        if data == self._data:
            return
        object.__setattr__(self, "_data", data)
        if self._save is not None:
            self._save(data)
