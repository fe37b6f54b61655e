import 'reflect-metadata';
import { runCli } from './cli';

runCli(process.argv.slice(2)).then(({ code, stdout, stderr }) => {
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  process.exitCode = code;
});
