/**
 * A list kept oldest first, where a member moves to the newest end or leaves in O(1): the idle
 * connections the connection caps may close, oldest idle first (connections.ts). Members carry
 * their own links (one Link per list a value is on), so moving one allocates nothing and hashes
 * nothing: it happens once per answered request.
 * Owns: the order. Refuses: what a member is and when it is idle (its user's).
 */

/** A value's place on one list. */
export class Link<T> {
  prev: Link<T> | null = null;
  next: Link<T> | null = null;
  listed = false;
  constructor(readonly value: T) {}
}

export class IdleList<T> {
  private head: Link<T> | null = null;
  private tail: Link<T> | null = null;

  /** The member that joined (or last moved) first; null when empty. */
  get oldest(): Link<T> | null {
    return this.head;
  }

  /** Puts `link` at the newest end, taking it from its place if it is already on the list. */
  push(link: Link<T>): void {
    if (link.listed) {
      if (this.tail === link) return;
      this.remove(link);
    }
    link.prev = this.tail;
    if (this.tail === null) this.head = link;
    else this.tail.next = link;
    this.tail = link;
    link.listed = true;
  }

  remove(link: Link<T>): void {
    if (!link.listed) return;
    if (link.prev === null) this.head = link.next;
    else link.prev.next = link.next;
    if (link.next === null) this.tail = link.prev;
    else link.next.prev = link.prev;
    link.prev = null;
    link.next = null;
    link.listed = false;
  }
}
