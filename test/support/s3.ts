// moto's S3 server on loopback (lab/s3.sh), as the pipeline's tests and benchmark use it for
// Pulumi's DIY backend: buckets made as an operator makes one, named by PULUMI_BACKEND_URL.
import { spawn, type ChildProcess } from "node:child_process";
import * as path from "node:path";
import { ROOT, sh } from "./cli";
import { freePort, until } from "./process";

export interface S3Server {
    readonly server: ChildProcess;
    /** http://127.0.0.1:PORT */
    readonly endpoint: string;
    /** Makes `name` and gives the backend URL of it (path-style addressing, plain HTTP on loopback). */
    bucket(name: string): Promise<string>;
}

/** Starts the server on a free port and waits until it answers S3's ListBuckets. */
export async function s3Server(): Promise<S3Server> {
    const moto = sh("bash", [path.join(ROOT, "lab/s3.sh"), "path"]).stdout.trim();
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const server = spawn(moto, ["-H", "127.0.0.1", "-p", endpoint.split(":").pop()!], { stdio: "ignore" });
    await until("moto's S3 server", 30, async () => ((await fetch(`${endpoint}/`)).ok ? true : undefined), server, undefined, "moto_server");
    const bucket = async (name: string) => {
        const made = await fetch(`${endpoint}/${name}`, { method: "PUT" });
        if (!made.ok) throw new Error(`bucket ${name}: ${made.status} ${await made.text()}`);
        return `s3://${name}?endpoint=${encodeURIComponent(endpoint)}&use_path_style=true&region=us-east-1`;
    };
    return { server, endpoint, bucket };
}
