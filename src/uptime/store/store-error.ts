/** Why a store file could not be used; the caller falls back to memory and says so. */
export class StoreError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}
