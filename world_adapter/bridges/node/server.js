#!/usr/bin/env node
// A game side of the storyteller bridge protocol, version 1 (docs/bridge-protocol.md), over
// the toy Lantern Market world. Usage:
//
//   STORYTELLER_BRIDGE_TOKEN=secret node server.js [--host 127.0.0.1] [--port 4010]
//       [--token-env STORYTELLER_BRIDGE_TOKEN] [--test-hooks] [--minimal]
//
// It prints "listening ws://HOST:PORT/storyteller" once it accepts connections, and stops on
// SIGTERM or SIGINT. --test-hooks answers the optional cause_event request (bridge check
// --events); a production game leaves it off. --minimal answers every method the protocol
// document's minimal profile allows with its empty answer (only character and room are real).
'use strict';

const crypto = require('node:crypto');
const { WebSocketServer } = require('ws');
const { EventLog } = require('./eventlog');
const { World, PROGS } = require('./world');

const PROTOCOL = 1;
const MAX_FRAME_BYTES = 1048576;
const HELLO_SECONDS = 10;
const SILENT_SECONDS = 60;
const KEPT_KEYS = 1000;

// ------------------------------------------------------------------ options

function options(argv) {
  const found = { host: '127.0.0.1', port: 4010, tokenEnv: 'STORYTELLER_BRIDGE_TOKEN', testHooks: false, minimal: false };
  for (let i = 2; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--host') found.host = argv[++i];
    else if (arg === '--port') found.port = Number(argv[++i]);
    else if (arg === '--token-env') found.tokenEnv = argv[++i];
    else if (arg === '--test-hooks') found.testHooks = true;
    else if (arg === '--minimal') found.minimal = true;
    else throw new Error(`unknown argument ${arg}`);
  }
  return found;
}

// ------------------------------------------------------------------ value checks

const isInt = (v) => Number.isInteger(v);
const isText = (v) => typeof v === 'string';
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isId = (v) => isText(v) && v.length >= 1 && v.length <= 64;
const isCursor = (v) => isObject(v) && isText(v.epoch) && v.epoch.length >= 1 && v.epoch.length <= 200 && isInt(v.seq) && v.seq >= 0;
const DOORS = ['respect_closed', 'include_unlocked', 'include_fireable', 'ignore', 'include_unlockable'];
const isRule = (v) => isObject(v) && DOORS.includes(v.doors);

// method -> [[param, check, required], ...], as in the protocol's method table
const METHODS = {
  zones: [],
  online_players: [],
  character: [['character_id', isInt, true]],
  room: [['room_id', isInt, true]],
  progs: [],
  execute_prog: [['prog', isText, true], ['arguments', isObject, true], ['idempotency_key', isText, true]],
  landmarks: [],
  landmark: [['name', isText, true]],
  path: [['origin_room_id', isInt, true], ['destination_room_id', isInt, true], ['rule', isRule, true], ['max_exits', isInt, false]],
  character_plan: [['character_id', isInt, true]],
  recent_plans: [['within', (v) => typeof v === 'number', true]],
  room_times: [['room_ids', (v) => v === null || (Array.isArray(v) && v.every(isInt)), false]],
  calendar: [['ref', isText, true], ['year', (v) => v === null || isInt(v), false]],
  entity: [['kind', (v) => ['Character', 'Location', 'Item', 'Exit'].includes(v), true], ['entity_id', isInt, true]],
};
const CAUSABLE = ['room_echo', 'speech', 'crime', 'state_change', 'invoke'];
// The minimal profile's answers (docs/bridge-protocol.md, "A minimal profile").
const MINIMAL = {
  zones: () => ({}),
  online_players: () => [],
  progs: () => [],
  execute_prog: () => { throw new Refusal('This game runs no progs.'); },
  landmarks: () => [],
  landmark: () => null,
  path: (p) => ({ origin_room_id: p.origin_room_id, destination_room_id: p.destination_room_id, directions: [], found: p.origin_room_id === p.destination_room_id }),
  character_plan: () => null,
};

class Refusal extends Error {} // the world refuses: command_failed

// ------------------------------------------------------------------ the game side

class Bridge {
  constructor(world, log, token, { testHooks = false, minimal = false } = {}) {
    this.world = world;
    this.log = log;
    this.tokenDigest = digest(token);
    this.testHooks = testHooks;
    this.minimal = minimal;
    this.outcomes = new Map(); // idempotency key -> prog outcome, newest last
    this.invocations = 0;
  }

  // One connection: hello first, then frames until it closes.
  accept(ws) {
    const peer = { ws, welcomed: false, cells: null, position: 0, heard: Date.now() };
    const helloTimer = setTimeout(() => ws.close(4003, 'no hello in time'), HELLO_SECONDS * 1000);
    const silence = setInterval(() => {
      if (Date.now() - peer.heard > SILENT_SECONDS * 1000) ws.close(4000, 'silent');
    }, 15000);
    const forward = (event) => {
      if (peer.cells && peer.cells.has(event.cell_id)) send(ws, event);
    };
    this.log.listeners.add(forward);
    // ws closes the connection itself (1009 for a frame over maxPayload); only log why.
    ws.on('error', (exc) => console.warn(`connection closed: ${exc.message}`));
    ws.on('close', () => { clearTimeout(helloTimer); clearInterval(silence); this.log.listeners.delete(forward); });
    ws.on('message', (data, isBinary) => {
      peer.heard = Date.now();
      if (!peer.welcomed) {
        clearTimeout(helloTimer);
        this.handshake(peer, isBinary ? null : data.toString('utf8'));
      } else if (isBinary) {
        badFrame(ws, 'Binary frames are not allowed; send text.');
      } else {
        this.onText(peer, data.toString('utf8'));
      }
    });
  }

  handshake(peer, text) {
    let hello = null;
    try { hello = text === null ? null : JSON.parse(text); } catch { hello = null; }
    if (!isObject(hello) || hello.type !== 'hello' || !isText(hello.token) || !isInt(hello.protocol)) {
      peer.ws.close(4003, 'the first frame must be hello');
    } else if (!crypto.timingSafeEqual(digest(hello.token), this.tokenDigest)) {
      peer.ws.close(4001, 'authentication failed');
    } else if (hello.protocol !== PROTOCOL) {
      peer.ws.close(4002, `unsupported protocol version ${hello.protocol}; supported: ${PROTOCOL}`);
    } else {
      peer.welcomed = true;
      send(peer.ws, { type: 'welcome', protocol: PROTOCOL, game: 'Lantern Market (node)', head: this.log.head() });
    }
  }

  onText(peer, text) {
    let frame;
    try { frame = JSON.parse(text); } catch { badFrame(peer.ws, 'Frame is not valid JSON.'); return; }
    if (!isObject(frame)) { badFrame(peer.ws, 'Frame is not a JSON object.'); return; }
    const { ws } = peer;
    switch (frame.type) {
      case 'ping':
        if (isId(frame.nonce)) send(ws, { type: 'pong', nonce: frame.nonce });
        else badFrame(ws, 'Bad ping frame: nonce must be 1-64 characters.');
        break;
      case 'pong':
        break; // hearing it was the point
      case 'subscribe':
        if (!Array.isArray(frame.cells) || !frame.cells.every(isInt) || !(frame.after === null || isCursor(frame.after))) {
          badFrame(ws, 'Bad subscribe frame: cells must be integers and after a cursor or null.');
        } else {
          this.subscribe(peer, frame.cells, frame.after);
        }
        break;
      case 'request':
        if (!isId(frame.id) || !isText(frame.method) || !(frame.params === undefined || isObject(frame.params))) {
          badFrame(ws, 'Bad request frame: id, method and params are required.', isText(frame.id) ? frame.id : null);
        } else {
          this.answer(peer, frame.id, frame.method, frame.params || {});
        }
        break;
      case 'error':
        console.warn(`the daemon reports a problem: ${frame.message}`);
        break;
      case 'invoked':
      case 'invoke_outcome':
        if (!isText(frame.id)) badFrame(ws, `Bad ${frame.type} frame: id is required.`);
        else console.log(`${frame.type} ${frame.id}: ${frame.reason || frame.outcome} ${frame.message || ''}`);
        break;
      default:
        badFrame(ws, `Unknown frame type ${JSON.stringify(frame.type)}.`);
    }
  }

  subscribe(peer, cells, after) {
    // The old subscription stops before `subscribed`: nothing of it follows that frame.
    peer.cells = null;
    const { position, gap } = this.log.start(after);
    send(peer.ws, { type: 'subscribed', cells, head: this.log.head() });
    if (gap) send(peer.ws, gap);
    const wanted = new Set(cells);
    for (const event of this.log.heldAfter(position)) if (wanted.has(event.cell_id)) send(peer.ws, event);
    peer.cells = wanted; // live events from here on (the log's listener forwards them)
  }

  answer(peer, id, method, params) {
    const spec = METHODS[method];
    const reply = (result) => send(peer.ws, { type: 'result', id, result });
    const fail = (code, message) => send(peer.ws, { type: 'error', id, code, message });
    if (method === 'cause_event' && this.testHooks) {
      this.cause(peer, id, params.kind);
      return;
    }
    // The minimal profile leaves out the optional entity look-up (docs: "A minimal profile").
    if (!spec || (this.minimal && method === 'entity')) { fail('unknown_method', `Unknown method '${method}'.`); return; }
    for (const [name, check, required] of spec) {
      if (params[name] === undefined ? required : !check(params[name])) {
        fail('bad_params', `params.${name}: missing or of the wrong type.`);
        return;
      }
    }
    try {
      reply(this.call(method, params));
    } catch (exc) {
      if (exc instanceof Refusal) fail('command_failed', exc.message);
      else { console.error(exc); fail('internal', 'The game failed while answering.'); }
    }
  }

  call(method, p) {
    const w = this.world;
    if (this.minimal && MINIMAL[method]) return MINIMAL[method](p);
    switch (method) {
      case 'zones': return w.zones();
      case 'online_players': return w.onlinePlayers();
      case 'character': return w.character(p.character_id);
      case 'room': return w.roomInfo(p.room_id);
      case 'progs': return w.progs();
      case 'execute_prog': return this.executeProg(p.prog, p.arguments, p.idempotency_key);
      case 'landmarks': return w.landmarks();
      case 'landmark': return w.landmark(p.name);
      case 'path':
        try { return w.path(p.origin_room_id, p.destination_room_id, p.max_exits ?? 50); } catch (exc) { throw new Refusal(exc.message); }
      case 'character_plan': return w.characterPlan(p.character_id);
      case 'recent_plans': return []; // nobody's plans change in the toy world
      case 'room_times': return {}; // the toy world keeps no calendar
      case 'calendar': return null;
      case 'entity': return w.entity(p.kind, p.entity_id);
      default: throw new Error(`no handler for ${method}`);
    }
  }

  // A remembered key answers its stored outcome and runs nothing; a failed run is not stored.
  executeProg(ref, args, key) {
    const known = this.outcomes.get(key);
    if (known) return { ...known, replayed: true };
    let ran;
    try { ran = this.world.runProg(ref, args); } catch (exc) { throw new Refusal(exc.message); }
    const prog = PROGS.find((x) => x.name === ran.prog);
    const outcome = { prog: ran.prog, return_type: prog.return_type, value: ran.value, replayed: false };
    this.outcomes.set(key, outcome);
    if (this.outcomes.size > KEPT_KEYS) this.outcomes.delete(this.outcomes.keys().next().value);
    return outcome;
  }

  // The test hook of `bridge check --events`: one event of a kind, or an invoke frame.
  cause(peer, id, kind) {
    if (!CAUSABLE.includes(kind)) {
      send(peer.ws, { type: 'error', id, code: 'bad_params', message: `kind must be one of ${CAUSABLE.join(', ')}.` });
      return;
    }
    if (kind !== 'invoke') this.world.cause(kind);
    send(peer.ws, { type: 'result', id, result: null });
    if (kind === 'invoke') this.invoke(peer.ws, 'Lantern Watch', 'The lanterns gutter all at once.', 1, 10);
  }

  // What a game's admin command does to ask a storyteller for a turn.
  invoke(ws, storyteller, text, roomId = null, characterId = null) {
    this.invocations += 1;
    const id = `${this.log.epoch}-inv-${this.invocations}`.slice(-64);
    send(ws, { type: 'invoke', id, storyteller, text, character_id: characterId, room_id: roomId });
    return id;
  }
}

function digest(text) { return crypto.createHash('sha256').update(text, 'utf8').digest(); }

function send(ws, frame) {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
}

function badFrame(ws, message, id = null) {
  send(ws, { type: 'error', id, code: 'bad_frame', message });
}

// ------------------------------------------------------------------ main

function main() {
  const opts = options(process.argv);
  const token = (process.env[opts.tokenEnv] || '').trim();
  if (!token) {
    console.error(`environment variable ${opts.tokenEnv} is not set (the bridge's shared secret)`);
    process.exit(78);
  }
  const log = new EventLog();
  const world = new World(log);
  for (const line of ['The lamplighter lights the first lantern.', 'The lamplighter lights a second lantern.', 'A stallholder rolls up her awning.']) {
    world.echo(1, line, 20); // a little history, so a daemon that subscribes from a cursor has some
  }
  const bridge = new Bridge(world, log, token, { testHooks: opts.testHooks, minimal: opts.minimal });
  const server = new WebSocketServer({ host: opts.host, port: opts.port, path: '/storyteller', maxPayload: MAX_FRAME_BYTES });
  server.on('connection', (ws) => bridge.accept(ws));
  server.on('listening', () => {
    const { address, port } = server.address();
    console.log(`listening ws://${address}:${port}/storyteller (epoch ${log.epoch})`);
  });
  const stop = () => {
    for (const client of server.clients) client.close(1001, 'server stopping');
    server.close(() => { console.log('stopped'); process.exit(0); });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) main();

module.exports = { Bridge };
