"""Training jobs that outlive the Streamlit script run (and the browser session) that started them.

One job at a time per server: a training run takes both cores of a small machine. The run itself
happens in a child process, so a crash, a NaN or an out-of-memory error there cannot take the app
down; the child streams its progress through a queue, and :meth:`Job.poll` folds it into plain state
that any session may read.
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import queue
import threading
import traceback
from dataclasses import dataclass, field

from disan.training.config import TrainConfig
from disan.training.probe import PROBE, Snapshot, snapshot


class Busy(RuntimeError):
    """Another job is running; its name is in the message."""


@dataclass
class Job:
    """One training run in a child process, as the page shows it; :meth:`poll` brings it up to date."""
    name: str
    config: TrainConfig
    probe: str = PROBE
    status: str = "starting"          # starting, running, done, stopped, failed
    progress: dict = field(default_factory=dict)   # the last step event: epoch, step, steps, loss, accuracy, eta
    history: list[dict] = field(default_factory=list)  # one record per finished epoch
    timeline: list[Snapshot] = field(default_factory=list)
    metrics: dict | None = None       # the final metrics, once done or stopped
    error: str | None = None          # why it failed
    _process: mp.Process | None = None
    _events: mp.Queue | None = None
    _stop: mp.Event | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def active(self) -> bool:
        """Whether the run may still report: starting or running."""
        return self.status in ("starting", "running")

    def poll(self) -> Job:
        """Fold the child's messages into this job's state; safe to call from several sessions."""
        with self._lock:
            while self._events is not None:
                try:
                    kind, payload = self._events.get_nowait()
                except queue.Empty:
                    break
                self._apply(kind, payload)
            if self.active and self._process is not None and not self._process.is_alive() and self._events.empty():
                self._apply("failed", f"the training process ended unexpectedly (exit code {self._process.exitcode}); "
                                      f"it may have run out of memory")
        return self

    def _apply(self, kind: str, payload) -> None:
        """Fold one message of the child into the job's state."""
        if kind == "step":
            self.status = "running"
            self.progress = payload
        elif kind == "epoch":
            self.history.append(payload)
        elif kind == "snapshot":
            self.timeline.append(payload)
        elif kind in ("done", "stopped"):
            self.status, self.metrics = kind, payload
        elif kind == "failed":
            self.status, self.error = "failed", payload

    def stop(self) -> None:
        """Ask the run to end after the current step; it keeps and evaluates the best checkpoint so far."""
        if self._stop is not None:
            self._stop.set()

    def fraction(self) -> float:
        """Share of the whole run done: its steps so far over its budget (epochs or ``--steps``)."""
        p = self.progress
        if not p:
            return 0.0
        return min(1.0, p["done"] / p["budget"])


def _worker(config: TrainConfig, probe: str, events: mp.Queue, stop: mp.Event) -> None:
    """Child process: train and report every step, epoch and probe snapshot."""
    from disan.training.train import train

    def progress(event: dict) -> None:
        if event["event"] == "step":
            keys = ("epoch", "step", "steps", "loss", "accuracy", "eta", "done", "budget")
            events.put(("step", {k: event[k] for k in keys}))
        else:
            events.put(("epoch", {k: v for k, v in event.items() if k not in ("model", "vocab", "event")}))
            snap = snapshot(event["model"], event["vocab"], probe, event["epoch"])
            if snap is not None:
                events.put(("snapshot", snap))

    try:
        metrics = train(config, progress=progress, should_stop=stop.is_set, log=_Null())
        events.put(("stopped" if metrics.get("stopped") else "done", metrics))
    except MemoryError:
        events.put(("failed", "out of memory: lower d_h or the batch size, or cap the training examples"))
    except Exception as e:  # every failure must reach the page as a message, whatever its type
        message = str(e) or type(e).__name__
        if "can't allocate memory" in message or "not enough memory" in message:
            message = "out of memory: lower d_h or the batch size, or cap the training examples"
        events.put(("failed", f"{type(e).__name__}: {message}" if not isinstance(e, ValueError) else message))
        traceback.print_exc()


class _Null:
    """A file that drops what is written: the page shows epochs from the event stream instead."""

    def write(self, _):
        return 0

    def flush(self):
        pass


class Registry:
    """The jobs of this server process. ``start`` refuses a second job while one is active."""

    def __init__(self):
        self.jobs: list[Job] = []
        self._lock = threading.Lock()
        self._ctx = mp.get_context("spawn")  # a clean interpreter: no Streamlit state, no forked threads

    @property
    def current(self) -> Job | None:
        """The latest job, polled; None before the first."""
        return self.jobs[-1].poll() if self.jobs else None

    def start(self, name: str, config: TrainConfig, probe: str = PROBE, prior: Job | None = None) -> Job:
        """Start training ``config`` in a child process; :class:`Busy` while another job is active.
        ``prior``: the job this one resumes, whose curves and timeline so far carry over."""
        with self._lock:
            current = self.current
            if current is not None and current.active:
                raise Busy(f"the training job {current.name!r} is running; wait for it or stop it first")
            job = Job(name, config, probe, history=list(prior.history) if prior else [],
                      timeline=list(prior.timeline) if prior else [],
                      _events=self._ctx.Queue(), _stop=self._ctx.Event())
            job._process = self._ctx.Process(target=_worker, args=(config, probe, job._events, job._stop),
                                             daemon=True, name=f"disan-train-{name}")
            job._process.start()
            self.jobs.append(job)
            return job

    def resume(self, job: Job) -> Job:
        """Start a stopped or failed ``job`` again from the end of its last finished epoch (``--resume``)."""
        return self.start(job.name, dataclasses.replace(job.config, resume=True), job.probe, prior=job)
