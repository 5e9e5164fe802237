/**
 * Per-owner registries (a store's siblings, the limiter names claimed on a store): one map per
 * owner, held weakly so that an owner nobody references any more takes its entries with it.
 */
export class PerOwner<Owner extends object, K, V> {
  readonly #maps = new WeakMap<Owner, Map<K, V>>();

  /** The entries of `owner`, created empty on first use. */
  of(owner: Owner): Map<K, V> {
    let map = this.#maps.get(owner);
    if (map === undefined) {
      map = new Map();
      this.#maps.set(owner, map);
    }
    return map;
  }

  /** The entries of `owner`, if it has any, forgotten. */
  take(owner: Owner): Map<K, V> | undefined {
    const map = this.#maps.get(owner);
    this.#maps.delete(owner);
    return map;
  }
}
