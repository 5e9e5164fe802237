// The restart scheduler and what a restart does here. Core's scheduler coalesces requests, keeps
// restarts 30 s apart (docs/design.md#restart-cooldown) and holds a due restart while requests are
// in flight (at most 5 minutes); this gateway only simulates the restart itself: the config file
// is read again (the config in force is kept if the file became invalid), its limiter numbers are
// put in force live, and every connected client is told, while the process and the limiters'
// state live on. The port changes only when the process itself restarts.
import { createRestartScheduler, presets } from '@portcullis/core';
import { configHash, loadConfig } from './config.js';
import { formatMs } from './status.js';

/** @import { Clock, RestartEvent, Timers } from '@portcullis/core' */
/** @import { GatewayConfig, RunningConfig } from './config.js' */
/** @import { JsonLogger } from './logger.js' */

/**
 * @param {{
 *   config: RunningConfig,
 *   bootConfig: GatewayConfig,
 *   configPath: string | undefined,
 *   clock: Clock,
 *   timers: Timers,
 *   logger: JsonLogger,
 *   pendingWork: () => number,
 *   onRestarted: (frame: string) => void,
 * }} options `configPath` is re-read on restart (without one, the boot config comes back);
 *   `pendingWork` counts the requests in flight, which a due restart waits for; `onRestarted`
 *   gets the `gateway.restarted` event frame to push to connected clients
 */
export function createRestarts(options) {
  const { config, bootConfig, configPath, clock, timers, logger, pendingWork, onRestarted } =
    options;
  let restarts = 0;

  /** @param {RestartEvent} event */
  function onRestart(event) {
    restarts += 1;
    if (configPath === undefined) {
      config.replace(bootConfig);
    } else {
      try {
        config.replace(loadConfig(configPath));
      } catch (error) {
        logger.error(
          { err: error, reasons: event.reasons },
          'restart: config could not be re-read; keeping the config in force',
        );
      }
    }
    const hash = configHash(config.current());
    logger.info(
      { event: 'gateway.restart', restarts, reasons: event.reasons, configHash: hash },
      'gateway restarted (simulated: config re-read, process and limiter state kept)',
    );
    onRestarted(
      JSON.stringify({
        type: 'event',
        event: 'gateway.restarted',
        payload: { restarts, reasons: event.reasons, configHash: hash },
      }),
    );
  }

  const scheduler = createRestartScheduler({
    ...presets.restart,
    clock,
    timers,
    logger,
    onRestart,
    pendingWork,
  });

  return {
    scheduler,
    /** The restart section of the status snapshot. */
    status() {
      const pending = scheduler.pending();
      const last = scheduler.lastRestartAt();
      return {
        rule: `coalesced; ≥ ${formatMs(presets.restart.cooldownMs)} apart; ${formatMs(presets.restart.defaultDelayMs)} default delay`,
        restarts,
        pending: pending === undefined ? null : pending,
        lastAgoMs: last === undefined ? null : clock.now() - last,
        cooldownLeftMs:
          last === undefined ? 0 : Math.max(0, last + presets.restart.cooldownMs - clock.now()),
      };
    },
  };
}
