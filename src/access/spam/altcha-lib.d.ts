/**
 * The part of altcha-lib 2.8 (ALTCHA's v2 proof of work) used here. Its package declares its types
 * only under "exports", which this project's module resolution (node10) does not read; Node itself
 * resolves the CommonJS builds at run time.
 */
declare module 'altcha-lib' {
  export interface ChallengeParameters {
    algorithm: string;
    nonce: string;
    salt: string;
    cost: number;
    keyLength: number;
    keyPrefix: string;
    keySignature?: string;
    expiresAt?: number;
    data?: Record<string, string | number | boolean | null>;
  }
  export interface Challenge {
    parameters: ChallengeParameters;
    signature?: string;
  }
  export interface Solution {
    counter: number;
    derivedKey: string;
  }
  export type DeriveKeyFunction = (
    parameters: ChallengeParameters,
    salt: Uint8Array,
    password: Uint8Array,
  ) => Promise<{ derivedKey: Uint8Array }>;
  export function createChallenge(options: {
    algorithm: string;
    cost: number;
    counter?: number;
    deriveKey: DeriveKeyFunction;
    data?: Record<string, string | number | boolean | null>;
    expiresAt?: number | Date;
    hmacSignatureSecret?: string;
    hmacKeySignatureSecret?: string;
  }): Promise<Challenge>;
  /** Used by the tests, as a bot that does the work would. */
  export function solveChallenge(options: {
    challenge: Challenge;
    deriveKey: DeriveKeyFunction;
  }): Promise<Solution | null>;
  export function verifySolution(options: {
    challenge: Challenge;
    solution: Solution;
    deriveKey: DeriveKeyFunction;
    hmacSignatureSecret: string;
    hmacKeySignatureSecret?: string;
  }): Promise<{ verified: boolean; expired: boolean }>;
}

declare module 'altcha-lib/algorithms/pbkdf2' {
  export const deriveKey: import('altcha-lib').DeriveKeyFunction;
}
