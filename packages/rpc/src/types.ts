/**
 * Any RPC dispatcher: takes the method name, its params and a per-connection context, and returns
 * the result (or a promise of it). Throwing (or rejecting) is how it reports an error.
 */
export type Dispatcher<Params = unknown, Ctx = unknown, Result = unknown> = (
  method: string,
  params: Params,
  ctx: Ctx,
) => Result;

/**
 * What a wrapped dispatcher returns: the inner dispatcher's own result when every step was
 * synchronous (memory store, synchronous hooks), or a promise of it when a step was asynchronous.
 */
export type Wrapped<Result> = Result | Promise<Awaited<Result>>;
