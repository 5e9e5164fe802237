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
 * What a wrapped dispatcher returns: always a promise of the inner dispatcher's result. Every
 * refusal, and every error of the inner dispatcher (thrown or rejected), is a rejection of it;
 * a wrapper never throws synchronously.
 */
export type Wrapped<Result> = Promise<Awaited<Result>>;
