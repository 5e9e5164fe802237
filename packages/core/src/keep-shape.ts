/** The instances {@link keepShape} keeps. */
const kept: object[] = [];

/**
 * Keeps `instance` alive for the life of the process, and with it its class's instance shape.
 *
 * V8 can let go of a class's instance shape (the hidden class its constructor's fields make) at a
 * full collection when no instance of it is alive, and with it of every optimized function that
 * made or read such instances (`reason: weak objects` in `node --trace-deopt`). A class whose
 * instances live for one call only (a layered login's attempt and its steps) has none alive
 * between calls, so every full collection sent the layered login back to the interpreter: a
 * wrong password cost a third more in the login bench, which collects before each sample
 * (bench/NOTES.md "Shapes a full collection took"). One instance made at load with placeholder
 * values keeps the shape: every later instance shares it, since the constructor adds the same
 * fields in the same order. For store and adapter authors with classes of their own made per call
 * (docs/adapter.md).
 */
export function keepShape(instance: object): void {
  kept.push(instance);
}

/**
 * A placeholder for a constructor argument of an instance given to {@link keepShape}: it is never
 * read, only stored.
 * @internal
 */
export const PLACEHOLDER: never = undefined as never;
