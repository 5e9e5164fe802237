/**
 * The lockouts in force per limiter, learnt from `portcullis:lockout` events: one end time per
 * lockout, in a binary min-heap per limiter, so counting the ones still in force pops the ended
 * ones first. Memory is bounded: at most `maxPerLimiter` end times per limiter (past it, the
 * soonest end is forgotten, so the gauge can only under-count, never grow without bound), and the
 * limiter names are configuration, never taken from a request.
 */
export class ActiveLockouts {
  readonly #heaps = new Map<string, number[]>();
  readonly #max: number;

  /** @param maxPerLimiter most end times kept for one limiter */
  constructor(maxPerLimiter: number) {
    this.#max = maxPerLimiter;
  }

  /** A lockout of `limiter` that ends at `until` started. */
  add(limiter: string, until: number, now: number): void {
    let heap = this.#heaps.get(limiter);
    if (heap === undefined) {
      heap = [];
      this.#heaps.set(limiter, heap);
    }
    prune(heap, now);
    if (until <= now) return;
    if (heap.length >= this.#max) pop(heap);
    push(heap, until);
  }

  /** Calls `report` with each limiter ever seen and its lockouts in force at `now` (0 included). */
  forEach(now: number, report: (count: number, limiter: string) => void): void {
    for (const [limiter, heap] of this.#heaps) {
      prune(heap, now);
      report(heap.length, limiter);
    }
  }
}

/** Drops the end times at or before `now`: a lockout ends when its time comes. */
function prune(heap: number[], now: number): void {
  while (heap.length > 0 && (heap[0] as number) <= now) pop(heap);
}

function push(heap: number[], value: number): void {
  heap.push(value);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if ((heap[parent] as number) <= value) break;
    heap[i] = heap[parent] as number;
    i = parent;
  }
  heap[i] = value;
}

function pop(heap: number[]): void {
  const last = heap.pop() as number;
  if (heap.length === 0) return;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child =
      right < heap.length && (heap[right] as number) < (heap[left] as number) ? right : left;
    if ((heap[child] as number) >= last) break;
    heap[i] = heap[child] as number;
    i = child;
  }
  heap[i] = last;
}
