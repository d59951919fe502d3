"""One serving replica, iteration by iteration, as vLLM V1 schedules it with chunked prefill.

Each iteration, in this order, within the engine's token budget:

1. every running sequence past its prompt decodes one token (one budget token each);
2. sequences whose prompt is partly prefilled continue it, first admitted first;
3. waiting requests are admitted first come, first served while fewer than ``max_seqs``
   sequences run and the KV cache has room for the request's prompt and output (reserved at
   admission); their prompt chunks fill the budget left. The head of the queue blocks the
   ones behind it. A request larger than the whole cache is admitted alone.

A request's first token comes at the end of the iteration that completes its prompt, each
later iteration gives one more, and it is done after ``output`` tokens (the first included).
An idle replica starts an iteration when a request arrives; a request arriving during an
iteration waits for its end (one arriving exactly at an iteration's end joins the next).

A request whose prompt hit the prefix cache (``Requests.cached``) prefills only the rest of it
(attending to the cached part) and reserves KV for that rest and its output. With speculative
decoding (``IterationCost.tokens_per_step`` = E above 1) an iteration is a speculative step: a
request's ``output - 1`` tokens after its first take ``round((output - 1) / E)`` steps (at least
one), and its context grows by E tokens a step.

Speed: between events nothing changes but the context, so a stretch of decode-only
iterations up to the next finish is priced at once and its end times summed in order
(``itertools.accumulate``); an arrival cuts the stretch at the first iteration end at or after it
(``bisect``). A decode-only iteration's time depends on the number of sequences and
their context alone, so ``DecodeTimes`` prices it for a block of consecutive contexts with
one ``IterationCost.iteration_s`` call on an array, and every replica of the kind reads its
stretches from the block. Each iteration is priced by the same call on the same numbers and
summed in the same order as one at a time, so the times are the same to the last bit.

The replica is driven from outside (``planner.simulate.fleet``): ``advance(t)`` runs every
iteration that starts before ``t``; ``outstanding(t)`` counts requests not finished by
``t``; ``add(rid, t)`` hands it a request arriving at ``t``.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import deque
from itertools import accumulate

import numpy as np

from planner.perf.engine import Engine

_IDLE, _GENERAL, _STRETCH = 0, 1, 2


def _growth(engine: Engine) -> float:
    """Context tokens a decoding sequence adds per iteration: 1 (an int, so contexts stay whole
    numbers), or a speculative step's mean yield (a cost without the figure: one token)."""
    per_step = getattr(engine.cost, "tokens_per_step", 1.0)
    return 1 if per_step == 1.0 else per_step


class DecodeTimes:
    """Seconds of a decode-only iteration by (sequences decoding, context tokens), shared by a
    kind's replicas. A block of ``BLOCK`` consecutive contexts is priced with one call once
    stretches have come to it ``REUSE`` times; until then each stretch is priced on its own."""

    BLOCK = 4096
    REUSE = 3
    CHUNK = 128  # iterations of a stretch priced on its own at once
    MAX_BLOCKS = 2048  # 64 MB of float64; beyond it the table starts again

    def __init__(self, engine: Engine) -> None:
        self.cost = engine.cost
        self.blocks: dict[tuple[int, int], np.ndarray] = {}
        self.seen: dict[tuple[int, int], int] = {}
        self.growth = _growth(engine)  # context tokens a sequence adds per iteration
        # an iteration's parts beside its decode part, by (decoding, prefill tokens, pairs,
        # prompts), and a prompt chunk's attention pairs by (tokens done, chunk): requests of a
        # few sizes ask for the same few again and again
        self.beside: dict[tuple[int, int, float, int], tuple[float, float, float]] = {}
        self.pairs: dict[tuple[int, int], float] = {}
        self.split = hasattr(self.cost, "beside_decode_s")  # else a cost that prices whole iterations only

    def iteration_s(self, decoding: int, context: float, tokens: int, pairs: float, prompts: int) -> float:
        """``IterationCost.iteration_s`` for one iteration: the same parts added in the same order."""
        if not self.split:
            return float(self.cost.iteration_s(decoding, context, tokens, pairs, prompts))
        key = (decoding, tokens, pairs, prompts)
        parts = self.beside.get(key)
        if parts is None:
            parts = self.beside[key] = self.cost.beside_decode_s(decoding, tokens, pairs, prompts)
        pre, link, fixed = parts
        return float(self.cost.decode_s(decoding, context) + pre + link + fixed)

    def chunk_pairs(self, done: int, chunk: int) -> float:
        key = (done, chunk)
        found = self.pairs.get(key)
        if found is None:
            found = self.pairs[key] = self.cost.chunk_pairs(done, chunk)
        return found

    def stretch(self, seqs: int, context: float, iterations: int) -> list[float]:
        """Seconds of up to ``iterations`` decode-only iterations from ``context`` (growing by
        ``seqs`` each); fewer when the stretch leaves the block of contexts it started in.
        Speculative steps (context growing by a fractional ``growth``): priced on their own."""
        if self.growth != 1.0:
            k = min(iterations, self.CHUNK)
            contexts = np.arange(k, dtype=np.float64) * (seqs * self.growth) + context
            return self._priced(seqs, contexts).tolist()
        index, offset = divmod(int(context), self.BLOCK)  # whole: contexts grow by 1 here
        key = (seqs, index)
        times = self.blocks.get(key)
        if times is None:
            seen = self.seen.get(key, 0) + 1
            self.seen[key] = seen
            if seen < self.REUSE:
                k = min(iterations, self.CHUNK)
                contexts = np.arange(k, dtype=np.float64) * seqs + context
                return self._priced(seqs, contexts).tolist()
            if len(self.blocks) >= self.MAX_BLOCKS:
                self.blocks.clear()
                self.seen.clear()
            contexts = np.arange(index * self.BLOCK, (index + 1) * self.BLOCK, dtype=np.float64)
            times = self._priced(seqs, contexts)
            self.blocks[key] = times
        k = min(iterations, (self.BLOCK - 1 - offset) // seqs + 1)
        return times[offset : offset + seqs * k : seqs].tolist()

    def _priced(self, seqs: int, contexts: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.cost.iteration_s(seqs, contexts), dtype=np.float64), contexts.shape)


class Requests:
    """Sizes and outcomes of a simulation's requests, by request id (lists: fast to index)."""

    def __init__(self, prompt: list[int], output: list[int], cached: list[int] | None = None) -> None:
        self.prompt = prompt
        self.output = output
        self.cached = cached or [0] * len(prompt)  # prompt tokens found in the prefix cache
        self.fill = [p - c for p, c in zip(prompt, self.cached, strict=True)]  # tokens to prefill
        self.first = [math.nan] * len(prompt)  # time of the first token
        self.finish = [math.nan] * len(prompt)  # time of the last token


class Replica:
    """One replica's scheduler state; see the module docstring."""

    def __init__(self, engine: Engine, requests: Requests, decode_times: DecodeTimes | None = None) -> None:
        self.cost = engine.cost
        self.decode_times = decode_times or DecodeTimes(engine)
        self.token_budget = engine.limits.token_budget
        self.max_seqs = engine.limits.max_seqs
        self.kv_capacity = engine.limits.kv_capacity_tokens
        self.req = requests
        self.clock = 0.0  # end of the last iteration run (or when the replica went idle)
        self.iterations = 0  # iterations run so far; the next one has this index
        self.waiting: deque[int] = deque()
        self.prefilling: list[list[int]] = []  # [request id, prompt tokens done], first admitted first
        self.decoding: list[tuple[int, int]] = []  # heap of (index of the iteration it finishes in, id)
        self.context: float = 0  # tokens of context the decoding sequences hold (prompt + generated)
        self.growth = _growth(engine)  # per sequence and iteration (speculation: E)
        self.kv_used = 0  # tokens reserved (prompt + output of every running sequence)
        self.running = 0  # decoding + prefilling
        self.assigned = 0
        self.finished = 0
        self.recent = 0  # requests that finished at `clock`
        self.recent_ids: list[int] = []
        self._state = _IDLE
        # end times of the priced stretch (a list: most stretches are a few dozen iterations,
        # where list arithmetic costs a fraction of numpy's per-call overhead)
        self._ends: list[float] | None = None
        self._finishes = False  # the priced stretch ends with a finish
        self.safe = math.inf  # advance(t) has nothing to run while t <= safe

    # --- driven from outside -------------------------------------------------------

    def outstanding(self, t: float) -> int:
        """Requests assigned and not finished by ``t`` (after ``advance(t)``)."""
        return self.assigned - self.finished + (self.recent if self.clock > t else 0)

    def advance(self, t: float, stop_at_finish: bool = False) -> list[int]:
        """Run every iteration that starts before ``t``; with ``stop_at_finish``, stop after
        the first one in which requests finish and return their ids."""
        while t > self.safe:
            if self._state == _GENERAL:
                self._general()
            elif self._ends is None:
                self._price_stretch()
                continue
            else:
                self._run_stretch()
            if stop_at_finish and self.recent:
                return self.recent_ids
        return []

    def add(self, rid: int, t: float) -> None:
        """A request arriving at ``t`` (``advance(t)`` first)."""
        self.assigned += 1
        if self._state == _STRETCH:
            head = self.waiting[0] if self.waiting else rid
            if self._blocked(head):  # it changes nothing until a request finishes
                self.waiting.append(rid)
                return
            if self._ends is not None and self.clock < t:
                self._cut(t)
        elif self._state == _IDLE:
            self.clock = max(self.clock, t)
        self.waiting.append(rid)
        self._plan()

    def busy(self) -> bool:
        return self._state != _IDLE

    # --- the scheduler ---------------------------------------------------------------

    def _blocked(self, rid: int) -> bool:
        """Whether request ``rid``, at the head of the queue, cannot be admitted now."""
        if self.running >= self.max_seqs or self.token_budget - len(self.decoding) <= 0:
            return True
        need = self.req.fill[rid] + self.req.output[rid]
        return self.running > 0 and self.kv_used + need > self.kv_capacity

    def _steps(self, rid: int) -> int:
        """Iterations a request decodes in after its first token."""
        left = self.req.output[rid] - 1
        if self.growth == 1.0:
            return left
        return max(1, round(left / self.growth))

    def _held(self, rid: int) -> float:
        """Context a finishing request leaves: its prompt, first token and every step's tokens."""
        if self.growth == 1.0:
            return self.req.prompt[rid] + self.req.output[rid]
        return self.req.prompt[rid] + 1 + self._steps(rid) * self.growth

    def _plan(self) -> None:
        """What runs next from `clock`: an iteration with prompt work, a decode-only stretch, or nothing."""
        self._ends = None
        if self.prefilling or (self.waiting and not self._blocked(self.waiting[0])):
            self._state, self.safe = _GENERAL, self.clock
        elif self.decoding:
            self._state, self.safe = _STRETCH, self.clock
        else:
            self._state, self.safe = _IDLE, math.inf

    def _general(self) -> None:
        """One iteration with prompt chunks (and whatever decodes beside them)."""
        req, table = self.req, self.decode_times
        decoding = len(self.decoding)
        room = self.token_budget - decoding
        tokens, pairs, prompts = 0, 0.0, 0  # prompts: attention-DP groups prefill them side by side
        completed: list[int] = []
        for entry in self.prefilling:
            if room <= 0:
                break
            rid, done = entry
            chunk = min(room, req.fill[rid] - done)
            pairs += table.chunk_pairs(req.cached[rid] + done, chunk)
            tokens, room, entry[1], prompts = tokens + chunk, room - chunk, done + chunk, prompts + 1
            if entry[1] == req.fill[rid]:
                completed.append(rid)
        while self.waiting and room > 0:
            rid = self.waiting[0]
            need = req.fill[rid] + req.output[rid]
            if self.running >= self.max_seqs or (self.running > 0 and self.kv_used + need > self.kv_capacity):
                break
            self.waiting.popleft()
            self.running += 1
            self.kv_used += need
            chunk = min(room, req.fill[rid])
            pairs += table.chunk_pairs(req.cached[rid], chunk)
            tokens, room, prompts = tokens + chunk, room - chunk, prompts + 1
            self.prefilling.append([rid, chunk])
            if chunk == req.fill[rid]:
                completed.append(rid)
        end = self.clock + table.iteration_s(decoding, float(self.context), tokens, pairs, max(1, prompts))
        index = self.iterations
        self.clock, self.iterations = end, index + 1
        self.context += decoding * self.growth
        finished = self._pop_finished(index, end)
        if completed:
            self.prefilling = [e for e in self.prefilling if e[1] < req.fill[e[0]]]
            for rid in completed:
                req.first[rid] = end
                if req.output[rid] <= 1:
                    self._finish(rid, end)
                    finished.append(rid)
                else:
                    heapq.heappush(self.decoding, (index + self._steps(rid), rid))
                    self.context += req.prompt[rid] + 1
        self.recent, self.recent_ids = len(finished), finished
        self._plan()

    def _price_stretch(self) -> None:
        """Price the decode-only iterations up to the next finish (or the end of a block of contexts)."""
        decoding = len(self.decoding)
        left = self.decoding[0][0] - self.iterations + 1
        seconds = self.decode_times.stretch(decoding, self.context, left)
        k = len(seconds)
        times = list(accumulate(seconds, initial=self.clock))  # in order: the same sums as one at a time
        self.safe = times[k - 1]  # the last iteration's start
        del times[0]
        self._ends, self._finishes = times, k == left

    def _run_stretch(self) -> None:
        assert self._ends is not None
        k = len(self._ends)
        self.iterations += k
        self.context += len(self.decoding) * k * self.growth
        self.clock = self._ends[-1]
        finished = self._pop_finished(self.iterations - 1, self.clock) if self._finishes else []
        self.recent, self.recent_ids = len(finished), finished
        self._plan()

    def _cut(self, t: float) -> None:
        """Run the priced stretch's iterations up to the first that ends at or after ``t``."""
        assert self._ends is not None
        k = bisect_left(self._ends, t) + 1
        self.iterations += k
        self.context += len(self.decoding) * k * self.growth
        self.clock = self._ends[k - 1]
        self.recent, self.recent_ids = 0, []

    def _pop_finished(self, index: int, end: float) -> list[int]:
        """Decoding sequences whose last token came in iteration ``index``, ending at ``end``."""
        done: list[int] = []
        while self.decoding and self.decoding[0][0] == index:
            rid = heapq.heappop(self.decoding)[1]
            self.context -= self._held(rid)
            self._finish(rid, end)
            done.append(rid)
        if not self.decoding and self.growth != 1.0:
            self.context = 0.0  # no rounding left over from fractional steps
        return done

    def _finish(self, rid: int, end: float) -> None:
        self.req.finish[rid] = end
        self.running -= 1
        self.kv_used -= self.req.fill[rid] + self.req.output[rid]
        self.finished += 1
