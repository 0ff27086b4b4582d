// The official JavaScript SDK's server doing the bench's echo work (bench/run.py's "a2a-js").
//
// Built only from @a2a-js/sdk parts, as its README shows: one DefaultRequestHandler on an
// InMemoryTaskStore, behind the SDK's Express handlers (jsonRpcHandler, restHandler,
// agentCardHandler) in one Express 5 app, in one Node.js process (no cluster).
//
// Routes use the same paths as a2a-hub's /a2a/echo agent:
//
// * POST /a2a/echo: JSON-RPC 1.0 and, with legacyCompat, the 0.3 methods (message/send ...)
//   on the same URL (chosen by the A2A-Version header: 0.3 or none is 0.3);
// * /a2a/echo/message:send and the other HTTP+JSON 1.0 routes;
// * GET /a2a/echo/.well-known/agent-card.json;
// * with a second argument, also the SDK's gRPC service (grpcService on the same request
//   handler, @grpc/grpc-js, in the same process and event loop) on that port.
//
// The executor does what a2a-hub's built-in echo agent (and bench/sdk_server.py) does: a Task
// (submitted) holding the user's message, working, one artifact "echo: <text>" named "echo",
// completed.  Nothing sleeps, nothing is logged per request.
//
//     node bench/js/server.js PORT [GRPC_PORT]

import { randomUUID } from 'node:crypto';

import express from 'express';
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import {
  UserBuilder,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';

const PREFIX = '/a2a/echo';
const port = Number(process.argv[2]);
const grpcPort = process.argv[3] === undefined ? undefined : Number(process.argv[3]);
if (!Number.isInteger(port) || port <= 0 || (grpcPort !== undefined && !(grpcPort > 0))) {
  console.error('usage: node bench/js/server.js PORT [GRPC_PORT]');
  process.exit(2);
}

function status(state) {
  return { state, message: undefined, timestamp: new Date().toISOString() };
}

// Task (submitted), working, artifact "echo: <text>", completed: a2a-hub's echo agent.
class EchoExecutor {
  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage } = requestContext;
    const text = userMessage.parts
      .filter((p) => p.content?.$case === 'text')
      .map((p) => p.content.value)
      .join('\n');
    eventBus.publish(
      AgentEvent.task(
        requestContext.task ?? {
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        }
      )
    );
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: status(TaskState.TASK_STATE_WORKING),
        metadata: undefined,
      })
    );
    eventBus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: randomUUID(),
          name: 'echo',
          description: '',
          parts: [
            {
              content: { $case: 'text', value: `echo: ${text}` },
              metadata: undefined,
              filename: '',
              mediaType: 'text/plain',
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      })
    );
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: status(TaskState.TASK_STATE_COMPLETED),
        metadata: undefined,
      })
    );
  }

  async cancelTask(taskId, eventBus) {
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: status(TaskState.TASK_STATE_CANCELED),
        metadata: undefined,
      })
    );
  }
}

const url = `http://127.0.0.1:${port}${PREFIX}`;
const iface = (protocolBinding, protocolVersion) => ({
  url,
  protocolBinding,
  tenant: '',
  protocolVersion,
});
const card = {
  name: 'Echo',
  description: "Answers every message with 'echo: <your text>'.",
  supportedInterfaces: [
    iface('JSONRPC', '1.0'),
    iface('HTTP+JSON', '1.0'),
    iface('JSONRPC', '0.3'),
    ...(grpcPort === undefined
      ? []
      : [{ url: `127.0.0.1:${grpcPort}`, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' }]),
  ],
  version: '1.0.0',
  capabilities: {
    streaming: true,
    pushNotifications: false,
    extensions: [],
    extendedAgentCard: false,
  },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'echo',
      name: 'Echo',
      description: 'Repeats text.',
      tags: ['echo'],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    },
  ],
  documentationUrl: '',
  signatures: [],
};

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
const userBuilder = UserBuilder.noAuthentication;
const rpc = jsonRpcHandler({ requestHandler, userBuilder, legacyCompat: { enabled: true } });
const rest = restHandler({ requestHandler, userBuilder });

const app = express();
app.use(
  `${PREFIX}/.well-known/agent-card.json`,
  agentCardHandler({ agentCardProvider: requestHandler })
);
// The JSON-RPC router answers POST on its mount point; every other path under the prefix is
// the REST router's (each request goes through one of the two, not both).
app.use(PREFIX, (req, res, next) => (req.path === '/' ? rpc : rest)(req, res, next));

const server = app.listen(port, '127.0.0.1');
server.on('error', (err) => {
  console.error(`a2a-js bench server: ${err.message}`);
  process.exit(1);
});
let grpcServer;
if (grpcPort !== undefined) {
  // Imported only here: the HTTP-only server does not need the gRPC packages.
  const { Server, ServerCredentials } = await import('@grpc/grpc-js');
  const { A2AService, grpcService } = await import('@a2a-js/sdk/server/grpc');
  grpcServer = new Server();
  grpcServer.addService(A2AService, grpcService({ requestHandler, userBuilder }));
  grpcServer.bindAsync(`127.0.0.1:${grpcPort}`, ServerCredentials.createInsecure(), (err) => {
    if (err) {
      console.error(`a2a-js bench server: gRPC: ${err.message}`);
      process.exit(1);
    }
  });
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    grpcServer?.forceShutdown();
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
