"""rlflow.Env: the graph-rewriting environment with Gymnasium's API.

    env = rlflow.Env(rlflow.zoo("squeezenet1_1"))
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=...))

When the `gymnasium` package can be imported, Env is a `gymnasium.Env`, its spaces are
`gymnasium.spaces.Space`s, and `gymnasium.make("rlflow/GraphRewrite-v0", graph=g)` makes
one; without it, the same classes stand on their own with the same methods.

An action is a pair (xfer, location): rule `xfer` at its valid location `location`; xfer N
(the number of rules) is NO-OP and ends the episode. The reward of a step is the share of
the input's cost (milliseconds under `cost_backend`) that the step saved, times
`reward_scale`, so an episode's rewards sum to (cost_0 - cost_T) / cost_0 * reward_scale.
"""

import numpy as np

from . import _core

try:  # Gymnasium is optional: its base classes when it is there, plain ones when not.
    import gymnasium as _gym
    from gymnasium import spaces as _spaces

    _EnvBase = _gym.Env
    _SpaceBase = _spaces.Space
except ImportError:  # pragma: no cover - depends on the machine
    _gym = None
    _EnvBase = object
    _SpaceBase = object


class _Seeded(_SpaceBase):
    """A space with its own NumPy generator, seeded by seed() (Gymnasium's convention)."""

    def __init__(self, shape, dtype, seed=None):
        if _gym is not None:
            super().__init__(shape=shape, dtype=dtype, seed=seed)
        else:
            self._shape, self.dtype, self._np_random = shape, None if dtype is None else np.dtype(dtype), None
            if seed is not None:
                self.seed(seed)

    if _gym is None:

        @property
        def shape(self):
            return self._shape

        @property
        def np_random(self):
            if self._np_random is None:
                self.seed()
            return self._np_random

        def seed(self, seed=None):
            self._np_random = np.random.default_rng(seed)
            return [seed]

        def __contains__(self, x):
            return self.contains(x)


class ActionSpace(_Seeded):
    """Pairs (xfer, location) with 0 <= xfer <= N (N: NO-OP) and 0 <= location < L.

    sample() draws uniformly from the whole box; sample(mask=obs) draws a valid action of
    an observation (its xfer_mask, then that rule's location_mask), as an agent must.
    """

    def __init__(self, num_xfers, max_locations, seed=None):
        self.num_xfers, self.max_locations = int(num_xfers), int(max_locations)
        self.nvec = np.array([self.num_xfers + 1, self.max_locations], dtype=np.int64)
        super().__init__((2,), np.int64, seed)

    @property
    def is_np_flattenable(self):
        return False  # no flatten() is registered for it

    def sample(self, mask=None):
        rng = self.np_random
        if mask is None:
            return np.array([rng.integers(n) for n in self.nvec], dtype=np.int64)
        xfers = np.flatnonzero(mask["xfer_mask"])
        xfer = int(rng.choice(xfers))
        if xfer == self.num_xfers:
            return np.array([xfer, 0], dtype=np.int64)
        return np.array([xfer, int(rng.choice(np.flatnonzero(mask["location_mask"][xfer])))], dtype=np.int64)

    def contains(self, x):
        try:
            a = np.asarray(x)
        except Exception:  # noqa: BLE001 - anything NumPy cannot read is not an action
            return False
        if a.shape != (2,) or not np.issubdtype(a.dtype, np.integer):
            return False
        return bool(0 <= a[0] <= self.num_xfers and 0 <= a[1] < self.max_locations)

    def __repr__(self):
        return f"ActionSpace(xfers={self.num_xfers} + NO-OP, locations={self.max_locations})"

    def __eq__(self, other):
        return isinstance(other, ActionSpace) and (self.num_xfers, self.max_locations) == (other.num_xfers, other.max_locations)


class ObservationSpace(_Seeded):
    """Graphs as Env observes them: a dict of NumPy arrays whose node and edge counts vary.

    nodes (n, fn) float64, edges (E, fe) float64, globals (fg,) float64, senders and
    receivers (E,) int32 node indices, xfer_mask (N+1,) bool with NO-OP last and always
    set, location_mask (N, L) bool whose valid locations come first in each row.
    """

    KEYS = ("nodes", "edges", "globals", "senders", "receivers", "xfer_mask", "location_mask")

    def __init__(self, num_xfers, max_locations, feature_sizes, seed=None):
        self.num_xfers, self.max_locations = int(num_xfers), int(max_locations)
        self.node_features, self.edge_features, self.global_features = (
            int(feature_sizes["node"]), int(feature_sizes["edge"]), int(feature_sizes["global"]))
        super().__init__(None, None, seed)

    @property
    def is_np_flattenable(self):
        return False

    def contains(self, x):
        if not isinstance(x, dict) or set(x) != set(self.KEYS):
            return False
        try:
            nodes, edges = x["nodes"], x["edges"]
            n, e = nodes.shape[0], edges.shape[0]
            xm, lm = x["xfer_mask"], x["location_mask"]
            return bool(
                nodes.ndim == 2 and nodes.shape[1] == self.node_features and nodes.dtype == np.float64
                and edges.ndim == 2 and edges.shape[1] == self.edge_features and edges.dtype == np.float64
                and x["globals"].shape == (self.global_features,)
                and x["senders"].shape == (e,) and x["receivers"].shape == (e,)
                and x["senders"].dtype == np.int32 and x["receivers"].dtype == np.int32
                and (e == 0 or (0 <= min(x["senders"].min(), x["receivers"].min())
                                and max(x["senders"].max(), x["receivers"].max()) < n))
                and xm.shape == (self.num_xfers + 1,) and xm.dtype == np.bool_ and bool(xm[-1])
                and lm.shape == (self.num_xfers, self.max_locations) and lm.dtype == np.bool_
                and np.array_equal(xm[:-1], lm.any(axis=1)))
        except (AttributeError, IndexError, TypeError, ValueError):
            return False

    def sample(self, mask=None, nodes=8, edges=12):
        """A random observation of the space's layout (random features, a random graph)."""
        rng = self.np_random
        lm = np.zeros((self.num_xfers, self.max_locations), dtype=np.bool_)
        counts = rng.integers(0, self.max_locations + 1, size=self.num_xfers) * (rng.random(self.num_xfers) < 0.5)
        for r, c in enumerate(counts):
            lm[r, :c] = True
        return {
            "nodes": rng.random((nodes, self.node_features)),
            "edges": rng.random((edges, self.edge_features)),
            "globals": rng.random(self.global_features),
            "senders": rng.integers(0, nodes, size=edges, dtype=np.int32),
            "receivers": rng.integers(0, nodes, size=edges, dtype=np.int32),
            "xfer_mask": np.append(lm.any(axis=1), True),
            "location_mask": lm,
        }

    def __repr__(self):
        return (f"ObservationSpace(graph: nodes (n, {self.node_features}), edges (E, {self.edge_features}), "
                f"globals ({self.global_features},); masks ({self.num_xfers + 1},), ({self.num_xfers}, {self.max_locations}))")

    def _layout(self):
        return (self.num_xfers, self.max_locations, self.node_features, self.edge_features, self.global_features)

    def __eq__(self, other):
        return isinstance(other, ObservationSpace) and self._layout() == other._layout()


class Env(_EnvBase):
    """The graph-rewriting environment, with Gymnasium's API (see the module's text).

    graph: an rlflow.Graph. rules: "agent" (the default: the built-in rules and the
    generated ones that match the graph, as `rlflow train` gives a new agent), "default"
    (every built-in and generated rule), "builtin", a rules file, or rlflow.rules.load(...).
    cost, device, target: as the command line's --cost, --device and --target; "auto" is
    the target's own pricing, as `rlflow optimize` prices (ONNX Runtime's op times for an
    ort-cpu target when it is installed, else the analytic roofline). reset and step
    release the GIL, so environments in separate threads step in parallel.
    """

    metadata = {"render_modes": []}
    render_mode = None

    def __init__(self, graph, *, rules="agent", cost="auto", device="auto", target="auto", max_steps=None,
                 max_locations=None, reward_scale=None, one_step_gains=False):
        options = {k: v for k, v in (("max_steps", max_steps), ("max_locations", max_locations),
                                     ("reward_scale", reward_scale)) if v is not None}
        self._core = _core._Env(graph, rules=rules, cost=cost, device=device, target=target,
                                one_step_gains=one_step_gains, **options)
        self._graph = graph
        self.action_space = ActionSpace(self._core.num_xfers, self._core.max_locations)
        self.observation_space = ObservationSpace(self._core.num_xfers, self._core.max_locations,
                                                  _core._Env.feature_sizes)
        self._np_random = None
        self._closed = False

    @property
    def np_random(self):
        """The environment's NumPy generator, seeded by reset(seed=)."""
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    @np_random.setter
    def np_random(self, generator):
        self._np_random = generator

    def _open(self):
        if self._closed:
            raise _core.PreconditionError("rlflow.Env: the environment is closed")
        return self._core

    def reset(self, *, seed=None, options=None):
        """Starts an episode on the graph: (obs, info). options: {} or None (none are read)."""
        core = self._open()
        if options:
            raise _core.PreconditionError(f"rlflow.Env.reset: no options are read; got {sorted(options)}")
        if _gym is not None:
            super().reset(seed=seed)  # Gymnasium's seeding of np_random (and np_random_seed)
        elif seed is not None:
            self._np_random = np.random.default_rng(seed)
        if seed is not None:
            self.action_space.seed(seed)
        return core.reset(seed=seed)

    def step(self, action):
        """(obs, reward, terminated, truncated, info); an action outside the space raises
        rlflow.PreconditionError naming the valid range, one the masks forbid as well."""
        core = self._open()
        if isinstance(action, np.ndarray):
            action = action.tolist()
        return core.step(action)

    def close(self):
        """Frees the environment; it cannot be used afterwards (close twice is fine)."""
        self._closed = True
        self._core = None

    def sample_action(self):
        """A uniformly random valid action (a rule with a location, or NO-OP, then one of its
        locations), from the generator reset(seed=) seeds."""
        return self._open().sample_action()

    def graph(self):
        """A copy of the graph as the episode has rewritten it."""
        return self._open().graph()

    def __getattr__(self, name):  # num_xfers, rule_names, cost_ms, ...: the core's
        if name.startswith("_") or self.__dict__.get("_closed", True):
            raise AttributeError(f"rlflow.Env has no attribute {name!r}" + (" (it is closed)" if self.__dict__.get("_closed") else ""))
        return getattr(self._core, name)

    def __repr__(self):
        return f"<rlflow.Env {self._graph!r}>" if not self._closed else "<rlflow.Env (closed)>"


if _gym is not None:  # registering an id again (a reload) only warns
    _gym.register(id="rlflow/GraphRewrite-v0", entry_point="rlflow.env:Env")
