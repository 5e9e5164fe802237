import type { Duplex } from 'node:stream';

/** Keeps a client's reset from becoming an uncaught exception while the guard owns the socket. */
function destroyOnError(this: Duplex): void {
  this.destroy();
}

/**
 * Takes charge of an upgrade socket's errors until it closes or is handed over; returns the hand-over
 * function. Once the socket has closed, none of the guard's listeners remain on it.
 */
export function holdSocket(socket: Duplex): () => void {
  const release = (): void => {
    socket.off('error', destroyOnError);
    socket.off('close', release);
  };
  socket.on('error', destroyOnError);
  socket.once('close', release);
  return release;
}
