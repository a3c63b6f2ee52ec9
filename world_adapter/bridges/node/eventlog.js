// The event log: an epoch chosen at boot, a seq counter and a ring buffer of the newest events,
// with the gap rules of docs/bridge-protocol.md ("Cursors, epochs and the replay buffer").
'use strict';

const crypto = require('node:crypto');

class EventLog {
  constructor(capacity = 10000) {
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    this.epoch = `lantern-${stamp}-${crypto.randomBytes(3).toString('hex')}`;
    this.capacity = capacity;
    this.events = []; // oldest first, at most `capacity`
    this.seq = 0;
    this.listeners = new Set(); // called with each appended event
  }

  head() { return { epoch: this.epoch, seq: this.seq }; }

  // The oldest seq still held, less one: a subscriber from there misses nothing held.
  floor() { return this.events.length ? this.events[0].cursor.seq - 1 : this.seq; }

  append(fields) {
    this.seq += 1;
    const event = { type: 'event', cursor: { epoch: this.epoch, seq: this.seq }, ...fields };
    this.events.push(event);
    if (this.events.length > this.capacity) this.events.shift();
    for (const listener of this.listeners) listener(event);
    return event;
  }

  // Where a subscription from `after` starts, and the gap frame to send first (or null).
  start(after) {
    if (after === null) return { position: this.seq, gap: null };
    const gap = (reason, resume) => ({ type: 'gap', reason, after, resume_after: { epoch: this.epoch, seq: resume } });
    if (after.epoch !== this.epoch) return { position: this.floor(), gap: gap('epoch', this.floor()) };
    if (after.seq > this.seq) return { position: this.seq, gap: gap('ahead', this.seq) };
    if (after.seq < this.floor()) return { position: this.floor(), gap: gap('expired', this.floor()) };
    return { position: after.seq, gap: null };
  }

  heldAfter(position) { return this.events.filter((e) => e.cursor.seq > position); }
}

module.exports = { EventLog };
