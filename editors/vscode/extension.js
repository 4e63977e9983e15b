// The Attractor pipelines extension: starts `attractor lsp` for pipeline files
// and adds commands that run or dry-run the current pipeline in a terminal and
// open a run on the page of `attractor serve`. Plain JavaScript, no build step.
"use strict";

const path = require("path");
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

const LANGUAGE = "attractor";
let client;

function settings() {
  return vscode.workspace.getConfiguration("attractor");
}

function selector() {
  return [{ language: LANGUAGE, pattern: settings().get("files") }];
}

function startClient() {
  const command = settings().get("command");
  const debounce = String(settings().get("debounce"));
  const server = { command, args: ["lsp", "--debounce", debounce] };
  client = new LanguageClient(
    "attractor",
    "Attractor",
    { run: server, debug: server },
    { documentSelector: selector() },
  );
  return client.start();
}

// A .dot file that matches attractor.files but opened in another language
// (Graphviz's own extension claims .dot too) becomes an Attractor pipeline.
function claim(document) {
  if (document.languageId === LANGUAGE || document.uri.scheme !== "file") return;
  const matches = vscode.languages.match(selector(), document) > 0
    || vscode.languages.match({ pattern: settings().get("files") }, document) > 0;
  if (matches && document.fileName.endsWith(".dot")) {
    vscode.languages.setTextDocumentLanguage(document, LANGUAGE);
  }
}

function quote(text) {
  return process.platform === "win32" ? `"${text}"` : `'${text.replace(/'/g, "'\\''")}'`;
}

function runInTerminal(extra) {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== LANGUAGE) {
    vscode.window.showErrorMessage("Open an attractor pipeline (.dot) first.");
    return;
  }
  const file = editor.document.fileName;
  const terminal = vscode.window.createTerminal({
    name: `attractor: ${path.basename(file)}`,
    cwd: path.dirname(file),
  });
  terminal.show();
  terminal.sendText(`${settings().get("command")} run ${quote(file)}${extra}`);
}

async function openRun() {
  const id = await vscode.window.showInputBox({
    prompt: "Run id (leave empty for the list of runs)",
    placeHolder: "20261122T040646Z-feature",
  });
  if (id === undefined) return;
  const base = settings().get("serveUrl");
  const page = id ? `${base}#/run/${encodeURIComponent(id.trim())}` : base;
  await vscode.env.openExternal(vscode.Uri.parse(page));
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("attractor.run", () => runInTerminal("")),
    vscode.commands.registerCommand("attractor.dryRun", () => runInTerminal(" --dry-run")),
    vscode.commands.registerCommand("attractor.openRun", openRun),
    vscode.commands.registerCommand("attractor.restartServer", async () => {
      if (client) await client.stop();
      await startClient();
    }),
    vscode.workspace.onDidOpenTextDocument(claim),
  );
  vscode.workspace.textDocuments.forEach(claim);
  await startClient();
}

async function deactivate() {
  if (client) await client.stop();
}

module.exports = { activate, deactivate };
