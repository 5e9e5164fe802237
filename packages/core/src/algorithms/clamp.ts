// The one clock-stepped-back rule of the windowed algorithms.

/**
 * A window that starts in the future (the clock stepped back) starts now instead, keeping its
 * counts: a fixed window then never lasts more than `windowMs` from now, and nothing in a sliding
 * window waits more than two windows, the time its state takes to drain entirely. Mutates
 * `state`; true when it changed it.
 */
export function clampStart(state: { start: number }, now: number): boolean {
  if (state.start <= now) return false;
  state.start = now;
  return true;
}
