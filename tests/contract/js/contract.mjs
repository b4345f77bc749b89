// Drives @huggingface/hub against a Hub endpoint and prints what each call returned, as JSON.
// Usage: node contract.mjs ENDPOINT REPO [TOKEN]; the Python contract suite compares the
// output against the corpus. A failing call is reported as {"error": message}, not thrown,
// so one broken route shows as one failed row.
import {
	countCommits,
	downloadFile,
	fileDownloadInfo,
	fileExists,
	listCommits,
	listFiles,
	modelInfo,
	parseSafetensorsMetadata,
	pathsInfo,
} from "@huggingface/hub";

const [hubUrl, repo, token] = process.argv.slice(2);
const auth = token ? { accessToken: token } : {};
const base = { repo: { type: "model", name: repo }, hubUrl, ...auth };

async function attempt(run) {
	try {
		return { value: await run() };
	} catch (error) {
		return { error: String(error?.message ?? error) };
	}
}

async function collect(generator) {
	const items = [];
	for await (const item of generator) items.push(item);
	return items;
}

const results = {};
results.modelInfo = await attempt(async () => {
	const info = await modelInfo({ name: repo, hubUrl, ...auth, additionalFields: ["sha", "filePaths"] });
	return { name: info.name, sha: info.sha, gated: info.gated, private: info.private, filePaths: info.filePaths };
});
results.countCommits = await attempt(() => countCommits(base));
results.listCommits = await attempt(async () =>
	(await collect(listCommits({ ...base, batchSize: 5 }))).map((c) => ({ oid: c.oid, title: c.title })),
);
results.listFiles = await attempt(async () =>
	(await collect(listFiles({ ...base, recursive: true }))).map((f) => ({
		path: f.path,
		type: f.type,
		oid: f.oid,
		size: f.size,
		lfs: f.lfs?.oid ?? null,
	})),
);
results.fileExists = await attempt(async () => ({
	config: await fileExists({ ...base, path: "config.json" }),
	missing: await fileExists({ ...base, path: "no-such-file.json" }),
}));
results.downloadFile = await attempt(async () => {
	const blob = await downloadFile({ ...base, path: "config.json" });
	return blob === null ? null : await blob.text();
});
results.fileDownloadInfo = await attempt(async () => {
	const info = await fileDownloadInfo({ ...base, path: "config.json" });
	const index = await fileDownloadInfo({ ...base, path: "model.safetensors.index.json" });
	const missing = await fileDownloadInfo({ ...base, path: "no-such-file.json" });
	return { config: info && { size: info.size, etag: info.etag }, index: index && { size: index.size, etag: index.etag }, missing };
});
results.pathsInfo = await attempt(async () =>
	(await pathsInfo({ ...base, paths: ["config.json", "model.safetensors.index.json"], expand: true })).map((p) => ({
		path: p.path,
		oid: p.oid,
		size: p.size,
		lastCommit: p.lastCommit?.id ?? null,
	})),
);
results.parseSafetensorsMetadata = await attempt(async () => {
	const meta = await parseSafetensorsMetadata({ ...base, computeParametersCount: true });
	return {
		sharded: meta.sharded,
		parameterCount: meta.parameterCount,
		parameterTotal: meta.parameterTotal,
		files: meta.filepaths,
		tensors: meta.sharded ? Object.values(meta.headers).reduce((n, h) => n + Object.keys(h).filter((k) => k !== "__metadata__").length, 0) : Object.keys(meta.header).length,
	};
});
process.stdout.write(JSON.stringify(results));
