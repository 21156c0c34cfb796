// Parse and cross-check a fleet config. Pure: it reads secrets only through the
// SecretSource it is given, and no error message ever carries a secret's value. The checks live by
// concern: errors.ts (how problems are told), secrets.ts, files.ts (key and checksum files),
// topology.ts (names, machines, ports, role rules, hardware), monitoring.ts.
import { fleetSpec, FleetSpec } from "./schema";
import { formatPath, isSecretField, samePath } from "./paths";
import { stringIssues } from "./strings";
import { checkMonitoring } from "./monitoring";
import { checkRollout } from "./rollout";
import { FleetConfigError, unionBranch, zodIssue } from "./errors";
import { checkKeyAddresses, checkSecrets, type SecretSource } from "./secrets";
import { checkSshKeys, resolveReleases } from "./files";
import { withSecretsDir } from "./secret-files";
import type { HostPlan } from "./plan";
import * as v from "../values/validators";
import { checkHardware, checkHostRefs, checkMachines, checkNames, checkPorts, checkRoleRules, planHosts } from "./topology";

/** What the config is read for: `up` (everything checked) or `status` (what a monitoring box can check). */
export interface ParseOptions {
    /**
     * Secret values are not decrypted (get() answers for presence only): their format, their
     * identity across nodes and their agreement with addresses are `up`'s to check.
     */
    readonly secretValues?: boolean;
    /** A sha256File that cannot be read here is a warning, not an error (the release is then left out). */
    readonly releaseFilesRequired?: boolean;
    /** What messages name as the fleet's origin (definition.ts): the config key or the fleet file. */
    readonly source?: string;
    /** The project's directory: a relative secretsDir is resolved against it, and must not be in it. */
    readonly projectDir?: string;
}

export interface FleetPlan {
    readonly spec: FleetSpec;
    readonly hosts: readonly HostPlan[];
    /** Problems reported but not fatal (hardware in warn mode, unpinned host keys). */
    readonly warnings: readonly string[];
    /** The secrets the fleet names: the stack config's, and the files of its secretsDir. */
    readonly secrets: SecretSource;
}

/** Validate everything that can be validated before a resource exists. Throws FleetConfigError. */
export function parseFleet(raw: unknown, config: SecretSource, options: ParseOptions = {}): FleetPlan {
    const values = options.secretValues ?? true;
    const source = options.source ?? "nodefleet:fleet";
    const parsed = fleetSpec.safeParse(raw, { reportInput: true });
    const schemaIssues = parsed.success ? [] : parsed.error.issues;
    // The string rule first, and what it refuses is not reported again by the schema; but a
    // field naming a secret that holds key material (a pasted PEM has newlines) is told that.
    const stringProblems = stringIssues(raw).filter((s) => !(isSecretField(s.path) && schemaIssues.some((z) => samePath(z.path, s.path))));
    if (stringProblems.length > 0 || !parsed.success) {
        const covered = (p: readonly PropertyKey[]) => stringProblems.some((s) => samePath(s.path, p.slice(0, s.path.length)));
        throw new FleetConfigError(source, [
            ...stringProblems.map((s) => `${formatPath(s.path)}: ${s.reason}`),
            ...schemaIssues
                .flatMap(unionBranch)
                .filter((z) => !covered(z.path))
                .map(zodIssue),
        ]);
    }
    const spec = parsed.data;
    const secrets = withSecretsDir(config, spec.secretsDir, options.projectDir ?? process.cwd(), !values);
    const issues: string[] = [];
    const warnings: string[] = [];
    checkNames(spec, issues);
    checkHostRefs(spec, issues, warnings);
    checkMachines(spec, issues);
    checkPorts(spec, issues);
    checkRoleRules(spec, issues, warnings);
    checkSecrets(spec, secrets, issues, values);
    if (values) checkKeyAddresses(spec, secrets, issues);
    checkSshKeys(spec, issues);
    checkMonitoring(spec.monitoring, spec.hosts, issues);
    checkRollout(spec.rollout, spec.nodes, issues);
    const secretUrl = (key: string) => {
        const value = values && secrets.isSecret(key) ? secrets.get(key) : undefined;
        return value !== undefined && v.secretUrlReason(value) === undefined ? value : undefined;
    };
    const releases = resolveReleases(spec, issues, warnings, options.releaseFilesRequired ?? true, secretUrl);
    const hosts = planHosts(spec, releases);
    checkHardware(spec, hosts, issues, warnings);
    if (issues.length > 0) throw new FleetConfigError(source, issues);
    return { spec, hosts, warnings, secrets };
}
