/**
 * The JSON-RPC text of what is sent to a node: one request, or a batch whose k-th request carries
 * the id the exchange gave it. The params are the caller's text as it is (never parsed again).
 */

/** One call to send: the method and the caller's params text. */
export interface OutgoingCall {
  method: string;
  paramsJson: string;
}

/** The text between a request's id and its params: made once per run of calls of one method in a batch. */
function methodPart(method: string): string {
  return `,"method":${JSON.stringify(method)},"params":`;
}

export function requestText(id: number, c: OutgoingCall, part = methodPart(c.method)): string {
  return `{"jsonrpc":"2.0","id":${id}${part}${c.paramsJson}}`;
}

/** A batch's text: the k-th call's request with the id `idAt(k)`. */
export function batchText(calls: readonly OutgoingCall[], idAt: (k: number) => number): string {
  let body = '[';
  let method = '';
  let part = '';
  for (let k = 0; k < calls.length; k++) {
    const c = calls[k]!;
    if (c.method !== method) {
      method = c.method;
      part = methodPart(method);
    }
    body += `${k === 0 ? '' : ','}${requestText(idAt(k), c, part)}`;
  }
  return `${body}]`;
}
