/**
 * `T` with every property whose value may be `undefined` made optional and `undefined`-free: the
 * shape `exactOptionalPropertyTypes` accepts where an option is either given or absent.
 */
export type WithoutUndefined<T> = {
  [K in keyof T as undefined extends T[K] ? never : K]: T[K];
} & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};

/**
 * A copy of `values` without the properties whose value is `undefined`. Options pass through
 * several layers (an adapter, a gate, a limiter, a store); under `exactOptionalPropertyTypes` an
 * absent option and one set to `undefined` differ, and a default must apply to both, so every hand
 * over drops the undefined ones here instead of in a block of its own. For setup, not hot paths.
 */
export function withoutUndefined<T extends object>(values: T): WithoutUndefined<T> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(values)) {
    const value = (values as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out as WithoutUndefined<T>;
}
