// The Lantern Market: a toy in-memory world of four rooms, four characters, two items and
// three progs. It answers the bridge protocol's queries and appends events to an event log;
// it knows nothing of WebSockets (server.js does).
'use strict';

const ROOMS = [
  { id: 1, name: 'Market Square', zone: 1, description: 'Stalls under strings of paper lanterns.' },
  { id: 2, name: 'Lantern Alley', zone: 1, description: 'A narrow lane of lantern makers.' },
  { id: 3, name: 'Well House', zone: 1, description: 'A stone roof over the old well.' },
  { id: 4, name: 'Old Gate', zone: 2, description: 'The crumbling north gate.' },
];
// room id -> {direction: room id}; every exit has its way back.
const EXITS = {
  1: { north: 2, east: 3 },
  2: { south: 1, north: 4 },
  3: { west: 1 },
  4: { south: 2 },
};
const LANDMARKS = [{ name: 'The Old Well', room: 3, descriptions: ['Coins glint at the bottom.'] }];
const PROGS = [
  { id: 1, name: 'EchoToRoom', parameters: [{ name: 'Room', type: 'Location' }, { name: 'Text', type: 'Text' }], return_type: 'Boolean', description: 'Shows a line of text to everyone in a room.' },
  { id: 2, name: 'GiveItem', parameters: [{ name: 'Who', type: 'Character' }, { name: 'What', type: 'Item' }], return_type: 'Boolean', description: 'Puts an item in a character\'s hands.' },
  { id: 3, name: 'MarketStatus', parameters: [], return_type: 'Text', description: 'How busy the market is.' },
];

class World {
  constructor(log) {
    this.log = log; // the EventLog events are appended to
    this.characters = new Map([
      [10, { id: 10, name: 'Ada Wick', gender: 'female', room: 1, player: true, online: true, short: 'a soot-smudged lantern maker', state: null }],
      [11, { id: 11, name: 'Bram Oakes', gender: 'male', room: 2, player: true, online: true, short: 'a broad-shouldered porter', state: null }],
      [20, { id: 20, name: 'the lamplighter', gender: 'male', room: 1, player: false, online: false, short: 'a stooped lamplighter', state: null }],
      [21, { id: 21, name: 'a pickpocket', gender: 'female', room: 3, player: false, online: false, short: 'a quick-fingered girl', state: null }],
    ]);
    this.items = new Map([
      [30, { id: 30, name: 'a paper lantern', holder: null, room: 1 }],
      [31, { id: 31, name: 'a copper coin', holder: 21, room: null }],
    ]);
    this.crimes = 0;
  }

  room(id) { return ROOMS.find((r) => r.id === id) || null; }

  // ---------------------------------------------------------------- events

  event(kind, roomId, fields, origin = 'world') {
    const room = this.room(roomId);
    return this.log.append({ kind, cell_id: roomId, zone_id: room ? room.zone : null, occurred_at: new Date().toISOString(), origin, ...fields });
  }

  echo(roomId, text, sourceId = null, origin = 'world') {
    return this.event('room_echo', roomId, { text, source_character_id: sourceId }, origin);
  }

  // One event of `kind`, for `bridge check --events` (the test hook). Throws a plain Error
  // with a message for the model when the world cannot.
  cause(kind) {
    const ada = this.characters.get(10);
    if (kind === 'room_echo') return this.echo(ada.room, 'Ada Wick holds a lantern up to the light.', 10);
    if (kind === 'speech') {
      return this.event('speech', ada.room, { speaker_id: 10, speaker_name: ada.name, text: 'Lanterns, two a penny!', language: 'Common', volume: 'Loud' });
    }
    if (kind === 'crime') {
      this.crimes += 1;
      return this.event('crime', 3, { crime_id: this.crimes, crime_type: 'Theft', legal_authority: 'Market Wardens', criminal_id: 21, victim_id: 10, witness_count: 1 });
    }
    if (kind === 'state_change') {
      const event = this.event('state_change', 1, { character_id: 20, state: 'Pass Out' });
      this.echo(1, 'The lamplighter blinks and gets back to his feet.', 20);
      return event;
    }
    throw new Error(`The Lantern Market cannot cause a '${kind}' event.`);
  }

  // ---------------------------------------------------------------- queries

  zones() {
    const zones = {};
    for (const r of ROOMS) (zones[r.zone] = zones[r.zone] || []).push(r.id);
    return zones;
  }

  summary(c) {
    const room = this.room(c.room);
    return { id: c.id, name: c.name, gender: c.gender, short_description: c.short, location_id: c.room, location_name: room ? room.name : '', is_player: c.player };
  }

  onlinePlayers() { return [...this.characters.values()].filter((c) => c.player && c.online).map((c) => this.summary(c)); }

  character(id) {
    const c = this.characters.get(id);
    if (!c) return null;
    return { ...this.summary(c), race: 'Human', ethnicity: '', culture: 'Lantern Market', age: 0, age_category: '', birthday: '', full_description: '' };
  }

  roomInfo(id) {
    const r = this.room(id);
    if (!r) return null;
    const occupants = [...this.characters.values()].filter((c) => c.room === id).map((c) => c.id);
    return { id: r.id, name: r.name, zone_id: r.zone, description: r.description, occupant_ids: occupants };
  }

  // One thing by kind and id, or null (an id of another kind is null too); no exits have ids.
  entity(kind, id) {
    const found = { Character: this.characters.get(id), Location: this.room(id), Item: this.items.get(id) }[kind];
    return found ? { kind, id, name: found.name } : null;
  }

  progs() { return PROGS.map((p) => ({ ...p, compile_error: '' })); }

  landmarks() { return LANDMARKS.map((l) => ({ name: l.name, room_id: l.room, room_name: this.room(l.room).name })); }

  landmark(name) {
    const l = LANDMARKS.find((x) => x.name.toLowerCase() === name.toLowerCase());
    if (!l) return null;
    const room = this.room(l.room);
    const occupants = [...this.characters.values()].filter((c) => c.room === l.room).map((c) => this.summary(c));
    return { name: l.name, room_id: l.room, room_name: room.name, room_description: room.description, descriptions: l.descriptions, occupants };
  }

  // Shortest path by number of exits (breadth first); the toy world has no doors.
  path(origin, destination, maxExits) {
    if (!this.room(origin) || !this.room(destination)) throw new Error('There is no such room.');
    const seen = new Map([[origin, []]]);
    const queue = [origin];
    while (queue.length) {
      const here = queue.shift();
      const route = seen.get(here);
      if (here === destination) return { origin_room_id: origin, destination_room_id: destination, directions: route, found: true };
      if (route.length >= maxExits) continue;
      for (const [direction, next] of Object.entries(EXITS[here] || {})) {
        if (!seen.has(next)) { seen.set(next, [...route, direction]); queue.push(next); }
      }
    }
    return { origin_room_id: origin, destination_room_id: destination, directions: [], found: false };
  }

  characterPlan(id) {
    const c = this.characters.get(id);
    if (!c) return null;
    return { character_id: c.id, name: c.name, short_description: c.short, short_term: null, long_term: null, updated_ago: null, is_player: c.player };
  }

  // ---------------------------------------------------------------- progs

  // Runs a prog; returns its value or throws an Error whose message the model may read.
  runProg(ref, args) {
    const prog = PROGS.find((p) => String(p.id) === ref || p.name.toLowerCase() === ref.toLowerCase());
    if (!prog) throw new Error(`No prog with id or name '${ref}' exists.`);
    for (const p of prog.parameters) this.checkArgument(p, args[p.name]);
    if (prog.name === 'EchoToRoom') {
      this.echo(args.Room, args.Text, null, 'prog');
      return { prog: prog.name, value: true };
    }
    if (prog.name === 'GiveItem') {
      const item = this.items.get(args.What);
      item.holder = args.Who;
      item.room = null;
      this.echo(this.characters.get(args.Who).room, `${this.characters.get(args.Who).name} is handed ${item.name}.`, args.Who, 'prog');
      return { prog: prog.name, value: true };
    }
    const online = this.onlinePlayers().length;
    return { prog: prog.name, value: `${online} players browse the stalls.` };
  }

  checkArgument(parameter, value) {
    const known = { Location: (v) => this.room(v), Character: (v) => this.characters.get(v), Item: (v) => this.items.get(v) };
    if (parameter.type === 'Text') {
      if (typeof value !== 'string') throw new Error(`${parameter.name} must be text.`);
    } else if (!Number.isInteger(value) || !known[parameter.type](value)) {
      throw new Error(`${parameter.name} must be the id of a ${parameter.type.toLowerCase()} that exists.`);
    }
  }
}

module.exports = { World, PROGS };
