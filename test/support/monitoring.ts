// The monitoring fixtures: the base fleet with a monitoring section and a receiver of each kind,
// and the secrets they name (fake URLs and tokens).
import { SECRETS, baseFleet } from "./fixtures";

export const SLACK_URL = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX";
export const TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
export const MONITORING_SECRETS = { ...SECRETS, hookUrl: "http://203.0.113.9:9099/alerts", slackUrl: SLACK_URL, tgToken: TG_TOKEN, discordUrl: "https://discord.com/api/webhooks/1/abc", smtpPassword: 'pa"ss: #word' };

/** The base fleet with monitoring on its storage host and one receiver of each kind. */
export function monitoredFleet(): any {
    const f = baseFleet();
    f.monitoring = {
        host: "h-storage",
        receivers: [
            { kind: "webhook", name: "ops-hook", urlSecret: "hookUrl" },
            { kind: "slack", name: "ops-slack", apiUrlSecret: "slackUrl", channel: "#node-alerts", severities: ["error"] },
            { kind: "telegram", name: "ops-telegram", botTokenSecret: "tgToken", chatId: -1001234567890 },
            { kind: "discord", name: "ops-discord", webhookUrlSecret: "discordUrl" },
            { kind: "email", name: "ops-mail", to: "ops@example.com", from: "nodefleet@example.com", smarthost: "smtp.example.com:587", authUsername: "nodefleet", authPasswordSecret: "smtpPassword" },
        ],
    };
    return f;
}

